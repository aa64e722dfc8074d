#!/usr/bin/env bash
# Regenerates the PKCS#12 and JKS fixtures of pkcs12.rs's unit tests (throwaway keys, password
# `fixture-secret`, nothing secret): each store a real tool writes by default, or on request.
#   pkcs12-openssl-aes.p12     openssl 3 `pkcs12 -export` default: PBES2 (PBKDF2-SHA256, AES-256-CBC), SHA-256 MAC
#   pkcs12-openssl-legacy.p12  openssl `-legacy` (openssl 1.1's default): RC2-40 certificates, 3DES key, SHA-1 MAC
#   pkcs12-keytool.p12         keytool -importkeystore (Java 17): PBES2 AES-256, 10000 iterations
#   pkcs12-keytool-trust.p12   keytool -importcert: one trusted CA entry (Java's trusted-key-usage attribute)
#   pkcs12-openssl-nokeys.p12  openssl `-nokeys`: a CA certificate without Java's trusted attribute
#   store.jks                  keytool -storetype JKS
# Needs openssl 3 and keytool (Java 17+). Run from this directory.
set -euo pipefail
P=fixture-secret
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/ca.key" 2>/dev/null
openssl req -x509 -new -key "$tmp/ca.key" -out "$tmp/ca.pem" -days 36500 -subj "/CN=pkcs12 fixture CA"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$tmp/leaf.key" 2>/dev/null
openssl req -new -key "$tmp/leaf.key" -out "$tmp/leaf.csr" -subj "/CN=pkcs12 fixture client"
openssl x509 -req -in "$tmp/leaf.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial -days 36500 \
    -out "$tmp/leaf.pem" 2>/dev/null
export_p12() { openssl pkcs12 -export -in "$tmp/leaf.pem" -inkey "$tmp/leaf.key" -certfile "$tmp/ca.pem" \
    -name client -passout "pass:$P" "$@"; }
export_p12 -out pkcs12-openssl-aes.p12
export_p12 -legacy -out pkcs12-openssl-legacy.p12
keytool -importkeystore -noprompt -srckeystore pkcs12-openssl-aes.p12 -srcstoretype PKCS12 -srcstorepass "$P" \
    -destkeystore pkcs12-keytool.p12 -deststoretype PKCS12 -deststorepass "$P" >/dev/null 2>&1
rm -f pkcs12-keytool-trust.p12 store.jks
keytool -importcert -noprompt -alias ca -file "$tmp/ca.pem" -keystore pkcs12-keytool-trust.p12 \
    -storetype PKCS12 -storepass "$P" >/dev/null 2>&1
openssl pkcs12 -export -nokeys -in "$tmp/ca.pem" -passout "pass:$P" -out pkcs12-openssl-nokeys.p12
keytool -importcert -noprompt -alias ca -file "$tmp/ca.pem" -keystore store.jks -storetype JKS \
    -storepass "$P" >/dev/null 2>&1
