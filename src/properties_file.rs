//! Java `.properties` files (`--command-config`), as `java.util.Properties.load` reads them:
//! `#`/`!` comments, `key=value`, `key: value` or `key value`, a backslash at the end of a line
//! continues it, `\t \n \r \f \uXXXX` and `\x` escapes in keys and values.

use nom::branch::alt;
use nom::bytes::complete::{tag, take_while, take_while_m_n};
use nom::character::complete::{anychar, char, none_of, one_of};
use nom::combinator::{map, map_opt, opt, rest};
use nom::multi::fold_many0;
use nom::sequence::preceded;
use nom::{IResult, Parser as _};

/// A file's lines joined where a trailing odd run of backslashes continues them, with the
/// leading whitespace of each continuation dropped (as Java does). Comment lines never continue.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let (number, mut joined) = match current.take() {
            Some((number, so_far)) => (number, so_far + line.trim_start()),
            None => {
                let trimmed = line.trim_start();
                if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
                    continue;
                }
                (n + 1, trimmed.to_owned())
            }
        };
        let trailing = joined.chars().rev().take_while(|c| *c == '\\').count();
        if trailing % 2 == 1 {
            joined.pop();
            current = Some((number, joined));
        } else {
            out.push((number, joined));
        }
    }
    out.extend(current);
    out
}

/// One escaped character: `\t`, `\n`, `\r`, `\f`, `\uXXXX`, or `\x` for any other `x`.
fn escape(input: &str) -> IResult<&str, char> {
    preceded(
        char('\\'),
        alt((
            map(char('t'), |_| '\t'),
            map(char('n'), |_| '\n'),
            map(char('r'), |_| '\r'),
            map(char('f'), |_| '\u{c}'),
            map_opt(
                preceded(char('u'), take_while_m_n(4, 4, |c: char| c.is_ascii_hexdigit())),
                |hex: &str| u32::from_str_radix(hex, 16).ok().and_then(char::from_u32),
            ),
            anychar,
        )),
    )
    .parse(input)
}

/// A key: characters up to the first unescaped `=`, `:` or whitespace.
fn key(input: &str) -> IResult<&str, String> {
    fold_many0(alt((escape, none_of("=: \t\u{c}\\"))), String::new, |mut key, c| {
        key.push(c);
        key
    })
    .parse(input)
}

/// Whitespace, then at most one `=` or `:`, then whitespace.
fn separator(input: &str) -> IResult<&str, ()> {
    let blank = |c: char| c == ' ' || c == '\t' || c == '\u{c}';
    map((take_while(blank), opt(one_of("=:")), take_while(blank)), |_| ()).parse(input)
}

/// The value: the rest of the logical line, escapes resolved (a lone trailing backslash kept).
fn value(input: &str) -> IResult<&str, String> {
    let chars = fold_many0(alt((escape, none_of("\\"))), String::new, |mut value, c| {
        value.push(c);
        value
    });
    map((chars, rest), |(mut value, tail): (String, &str)| {
        value.push_str(tail);
        value
    })
    .parse(input)
}

fn entry(input: &str) -> IResult<&str, (String, String)> {
    map((key, separator, value), |(k, (), v)| (k, v)).parse(input)
}

/// Every `(key, value)` of a properties file, in file order (a later duplicate wins when they
/// are applied). A line whose key is empty (e.g. `=value`) is an error naming its line.
pub fn parse_properties(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (number, line) in logical_lines(text) {
        match entry(&line) {
            Ok((_, (k, _))) if k.is_empty() => return Err(format!("line {number}: no key before the value")),
            Ok((_, pair)) => out.push(pair),
            Err(_) => return Err(format!("line {number}: not `key=value`")),
        }
    }
    Ok(out)
}

/// A `-X KEY=VALUE` argument.
pub fn parse_assignment(text: &str) -> Result<(String, String), String> {
    let parsed: IResult<&str, &str> = take_while(|c: char| c != '=').parse(text);
    match parsed {
        Ok((after, name)) if !name.trim().is_empty() => {
            match tag::<_, _, nom::error::Error<&str>>("=").parse(after) {
                Ok((value, _)) => Ok((name.trim().to_owned(), value.to_owned())),
                Err(_) => Err(format!("`{name}`: expected KEY=VALUE")),
            }
        }
        _ => Err("expected KEY=VALUE with a non-empty KEY".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn a_kafka_command_config_file_reads_as_java_reads_it() {
        let text = "# generated\n! also a comment\nsecurity.protocol=SASL_SSL\nsasl.mechanism : SCRAM-SHA-512\n\
                    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n    \
                    username=\"admin\" password=\"a=b\";\nssl.endpoint.identification.algorithm=\nclient.id kwire-test\n";
        assert_eq!(
            parse_properties(text).unwrap(),
            pairs(&[
                ("security.protocol", "SASL_SSL"),
                ("sasl.mechanism", "SCRAM-SHA-512"),
                (
                    "sasl.jaas.config",
                    "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\" password=\"a=b\";"
                ),
                ("ssl.endpoint.identification.algorithm", ""),
                ("client.id", "kwire-test"),
            ])
        );
    }

    #[test]
    fn escapes_in_keys_and_values_are_resolved() {
        assert_eq!(
            parse_properties("a\\=b=c\\td\\u00e9\r\nwindows=path\\\\x\n").unwrap(),
            pairs(&[("a=b", "c\td\u{e9}"), ("windows", "path\\x")])
        );
    }

    #[test]
    fn a_line_with_no_key_names_its_line_number() {
        assert_eq!(parse_properties("a=1\n\n=oops\n"), Err("line 3: no key before the value".to_owned()));
    }

    #[test]
    fn x_assignments_split_at_the_first_equals() {
        assert_eq!(parse_assignment("sasl.password=a=b"), Ok(("sasl.password".to_owned(), "a=b".to_owned())));
        assert!(parse_assignment("no-equals").is_err());
        assert!(parse_assignment("=v").is_err());
    }

    proptest! {
        #[test]
        fn any_text_parses_or_is_refused_without_panicking(text in "\\PC{0,300}") {
            let _ = parse_properties(&text);
            let _ = parse_assignment(&text);
        }

        #[test]
        fn plain_key_value_lines_parse_back(entries in proptest::collection::vec(("[a-z][a-z.]{0,15}", "[a-zA-Z0-9 ;\"=:/.-]{0,30}"), 0..10)) {
            let text = entries.iter().fold(String::new(), |text, (k, v)| text + k + "=" + v + "\n");
            let parsed = parse_properties(&text).unwrap();
            // Java drops the whitespace before a value and keeps the whitespace after it.
            let expected: Vec<(String, String)> = entries.iter().map(|(k, v)| (k.clone(), v.trim_start().to_owned())).collect();
            prop_assert_eq!(parsed, expected);
        }
    }
}
