#!/usr/bin/env bash
# fuzz/seed-corpus.sh - fills fuzz/corpus/<target>/ (gitignored) with seed inputs:
#   1. every body Apache Kafka wrote in kafka-wire/src/protocol/messages/testdata/*-bodies.txt
#      (lines `<Api> <request|response> <version> <hex>`), prefixed with the two bytes the
#      request/response targets read first (API key, version), as a body alone and behind a
#      header (response header v0/v1; request header v1/v2 with a null client id), for the
#      typed request/response targets and the schema_request/schema_response ones (same layout);
#   2. every record set Kafka wrote in kafka-wire/src/protocol/records/testdata/*-records.txt,
#      if present, for record_set and record_batch;
#   3. every consumer-protocol message kafka-clients wrote in
#      kafka-wire/src/protocol/messages/testdata/kafka-4.1.1-consumer-protocol.txt, for
#      consumer_protocol;
#   4. the fault rules files of the book (docs/src/proxy-and-decoding.md: its ```toml blocks
#      and <<'TOML' here-documents), for fault_rules;
#   5. generated seeds (fuzz/examples/seeds.rs): sample bodies of every API and version,
#      record batches with each codec, control/transactional batches, legacy message sets,
#      compressed blobs for each decompressor, frames for the splitter, offset files for
#      file_store, CSVs for consumer_groups_csv, consumer-protocol messages, fault rules and
#      --fault texts for fault_rules, and request and response frames for fault_answers.
# Safe to re-run: files are named after their content's origin and overwritten.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
corpus=${1:-corpus}
testdata=../kafka-wire/src/protocol/messages/testdata
api_rs=../kafka-wire/src/protocol/api.rs

# "ListOffsets" -> 2, from the `NAME = key, "Name";` table in api.rs.
declare -A key
while read -r name k; do key[$name]=$k; done < <(sed -nE 's/^ *[A-Z_]+ = ([0-9]+), "([A-Za-z]+)";$/\2 \1/p' "$api_rs")

hex2() { printf '%02x' "$1"; }

# endpoint_rewrite reads byte 0 as an index into its table of the APIs whose responses carry
# broker endpoints (`APIS` in fuzz_targets/endpoint_rewrite.rs: keep the two in the same order),
# byte 1 as the version, then the response frame (header and body).
declare -A endpoint_index=([Produce]=0 [Fetch]=1 [Metadata]=2 [FindCoordinator]=3 [Vote]=4
    [BeginQuorumEpoch]=5 [EndQuorumEpoch]=6 [DescribeQuorum]=7 [FetchSnapshot]=8
    [DescribeCluster]=9 [ShareFetch]=10 [ShareAcknowledge]=11 [UpdateRaftVoter]=12)
e=0
# endpoint_seed NAME API VERSION FRAME_HEX: one endpoint_rewrite input, if API carries endpoints.
endpoint_seed() {
    local index=${endpoint_index[$2]:-}
    [ -n "$index" ] || return 0
    mkdir -p "$corpus/endpoint_rewrite"
    echo "$(hex2 "$index")$(hex2 "$3")$4" | xxd -r -p > "$corpus/endpoint_rewrite/$1"
    e=$((e + 1))
}
n=0
for file in "$testdata"/kafka-*-bodies.txt; do
    release=$(basename "$file" -bodies.txt)
    i=0
    while read -r api dir version hex; do
        [ -n "${api:-}" ] || continue
        k=${key[$api]:?"API $api is not in $api_rs"}
        i=$((i + 1))
        prefix="$(hex2 "$k")$(hex2 "$version")"
        if [ "$dir" = request ]; then
            header="$(printf '%04x%04x' "$k" "$version")00000007ffff"
        else
            header=00000007
        fi
        mkdir -p "$corpus/$dir"
        base="$corpus/$dir/$release-$api-v$version-$i"
        echo "$prefix$hex" | xxd -r -p > "$base"
        echo "$prefix$header$hex" | xxd -r -p > "$base-header"
        echo "$prefix${header}00$hex" | xxd -r -p > "$base-flexheader"
        if [ "$dir" = response ]; then
            endpoint_seed "$release-$api-v$version-$i-header" "$api" "$version" "$header$hex"
            endpoint_seed "$release-$api-v$version-$i-flexheader" "$api" "$version" "${header}00$hex"
        fi
        mkdir -p "$corpus/schema_$dir"
        cp "$base" "$base-header" "$base-flexheader" "$corpus/schema_$dir/"
        n=$((n + 6))
    done < "$file"
done
echo "seed-corpus: $n inputs from Kafka's body fixtures"

# Frames captured from the local cluster (scripts/capture-fixtures): whole frames into `frame`
# (requests keep their size prefix; responses get one), and the frame with its header into the
# request/response targets.
c=0
mkdir -p "$corpus/frame"
while read -r api dir version hex; do
    [ -n "${api:-}" ] || continue
    k=${key[$api]:?"API $api is not in $api_rs"}
    c=$((c + 1))
    prefix="$(hex2 "$k")$(hex2 "$version")"
    mkdir -p "$corpus/$dir"
    if [ "$dir" = request ]; then
        echo "0000$hex" | xxd -r -p > "$corpus/frame/captured-$c"
        echo "$prefix${hex:8}" | xxd -r -p > "$corpus/$dir/captured-$api-v$version-$c-header"
    else
        echo "0000$(printf '%08x' $((${#hex} / 2)))$hex" | xxd -r -p > "$corpus/frame/captured-$c"
        echo "$prefix$hex" | xxd -r -p > "$corpus/$dir/captured-$api-v$version-$c-header"
        endpoint_seed "captured-$api-v$version-$c" "$api" "$version" "$hex"
    fi
done < "$testdata/captured-4.1.1.txt"
echo "seed-corpus: $c captured frames; $e endpoint_rewrite inputs from both"

# Record sets written by Kafka's MemoryRecordsBuilder (lines `set <name> <hex>`), where present:
# into record_set (byte 0 = 3: CRCs checked, legacy nesting 1), record_batch and record_batch_view
# (byte 0 = 1), and record_batch_streamed (byte 0 = 1, byte 1 = 3: 64-byte chunks).
m=0
for file in ../kafka-wire/src/protocol/records/testdata/kafka-*-records.txt; do
    [ -f "$file" ] || continue
    release=$(basename "$file" -records.txt)
    while read -r kind name hex; do
        [ "$kind" = set ] || continue
        mkdir -p "$corpus/record_set" "$corpus/record_batch" "$corpus/record_batch_view" \
            "$corpus/record_batch_streamed"
        echo "03$hex" | xxd -r -p > "$corpus/record_set/$release-$name"
        echo "0103$hex" | xxd -r -p > "$corpus/record_batch_streamed/$release-$name"
        echo "01$hex" | xxd -r -p > "$corpus/record_batch/$release-$name"
        echo "01$hex" | xxd -r -p > "$corpus/record_batch_view/$release-$name"
        m=$((m + 1))
    done < "$file"
done
echo "seed-corpus: $m record sets from Kafka's record fixtures"

# Consumer-protocol messages written by kafka-clients (lines `<Name> <version> <hex>`, the hex
# version-prefixed), for consumer_protocol as they are.
p=0
mkdir -p "$corpus/consumer_protocol"
while read -r name version hex; do
    [ -n "${name:-}" ] || continue
    p=$((p + 1))
    echo "$hex" | xxd -r -p > "$corpus/consumer_protocol/kafka-4.1.1-$name-v$version-$p"
done < "$testdata/kafka-4.1.1-consumer-protocol.txt"
echo "seed-corpus: $p consumer-protocol messages from Kafka"

# The book's fault rules files, as the user copies them, for fault_rules.
mkdir -p "$corpus/fault_rules"
r=$(awk -v dir="$corpus/fault_rules" '
    /^```toml$/ || /<<.TOML.$/ { n++; on = 1; file = dir "/docs-proxy-and-decoding-" n; printf "" > file; next }
    on && (/^```$/ || /^TOML$/) { on = 0; close(file); next }
    on { print > file }
    END { print n + 0 }' ../docs/src/proxy-and-decoding.md)
echo "seed-corpus: $r fault rules files from the book"

# The generated seeds; the example builds on the pinned stable toolchain (no libFuzzer needed).
cargo run --quiet --locked --example seeds -- "$corpus"
for d in "$corpus"/*/; do echo "seed-corpus: $(ls "$d" | wc -l) in $d"; done
