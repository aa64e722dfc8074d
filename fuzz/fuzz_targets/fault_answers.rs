//! `kwire proxy`'s byte-level fault actions (`kwire_faults`: `error_answer`,
//! `request_topics::named_in`, `rewrite::rewrite_fields`, `corrupt::corrupt_fetch_response`) on
//! any frame: byte 0 picks the action, the next bytes its error code, API, version or field;
//! no panic, and what they make decodes again (`kwire_fuzz::fault_answers`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::fault_answers(data));
