//! `kwire proxy`'s fault rules (`kwire_faults::rules::parse_file` and `parse_flag`,
//! `kwire_faults::scenario::parse_scenario`) on any text: no panic, every error names the file
//! or the flag, each rule names its own line, a rules file reads as a scenario, and a flag reads
//! as its `[[rule]]` table does (`kwire_fuzz::fault_rules`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kwire_fuzz::fault_rules(data));
