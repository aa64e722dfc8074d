//! `kafka_message!`: the one place the shape shared by every message struct is written.
//!
//! Each struct in `protocol::messages` is declared as a doc, a name and a field list;
//! the macro emits
//!
//! - `#[derive(Debug, Clone, PartialEq, Eq, Default)]` (`[no_default]` drops `Default`, for the
//!   structs that implement it by hand) and, under the `json` feature, `serde::Serialize`;
//! - every field `pub`, with its docs and any other attributes it is given passed through, and
//!   the `skip_serializing_if` its version gate implies (see below);
//! - the trailing `tagged_fields: TaggedFields`, skipped in JSON when empty (`[flexible]`: for
//!   the APIs whose every version is flexible, its doc does not say "flexible versions only";
//!   `[no_tagged_fields]`: none, for the APIs without flexible versions, or with a hand-written
//!   doc as a `[tagged_fields]` field). Several flags go in this order: `[no_default, flexible]`;
//! - under `cfg(test)` only, `FIELDS`: each field's JSON name and the versions the struct
//!   declares it for, which `messages::field_lists` checks against the schema table.
//!
//! Decoders and encoders (`impl Body`) stay hand-written next to the struct.
//!
//! A field is `name: Type,` after its docs and attributes, optionally preceded by one gate:
//!
//! | gate | the field exists | JSON skips it when |
//! | --- | --- | --- |
//! | (none) | in every version that has the struct | never |
//! | `[since N]`, `[since N until M]` | from vN (to vM) | it is `None` |
//! | `[nullable since N]`, `[nullable since N until M]` | from vN (to vM), nullable | it is `None` and the version rendered lacks it (`json::absent_below` / `json::absent`) |
//! | `[vec since N]` | from vN (a tagged array) | it is empty |
//! | `[rename "json_name"]` | in every version, under Kafka's other name | never |
//! | `[tagged_fields]` | the raw tagged fields, documented by hand (not a schema field) | it is empty |
//!
//! ```text
//! kafka_message! {
//!     /// A Heartbeat response (v0–v4).
//!     pub struct HeartbeatResponse {
//!         /// Added in v1.
//!         [since 1] throttle_time_ms: Option<i32>,
//!         /// The error code, or 0 if there was no error.
//!         error_code: ErrorCode,
//!     }
//! }
//! ```

/// One field of a message struct as the struct declares it (test builds only): its JSON name
/// (Kafka's, snake cased) and the versions it exists in (`None`: from / to the first / last
/// version that has the struct).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MessageField {
    pub(crate) name: &'static str,
    pub(crate) since: Option<i16>,
    pub(crate) until: Option<i16>,
}

/// Declares a message struct from its field list; see the module docs.
macro_rules! kafka_message {
    // Entry: struct docs, name, optional flags, the field list.
    ($(#[$attr:meta])* pub struct $name:ident $([$($flag:ident),+])? { $($body:tt)* }) => {
        $crate::protocol::message_macro::kafka_message! {
            @munch [$(#[$attr])*] $name [$($($flag)+)?] [] [] $($body)*
        }
    };

    // A field with no gate.
    (@munch $sa:tt $name:ident $flags:tt [$($out:tt)*] [$($spec:tt)*]
        $(#[$a:meta])* $f:ident : $ty:ty, $($rest:tt)*) => {
        $crate::protocol::message_macro::kafka_message! {
            @munch $sa $name $flags [$($out)* $(#[$a])* pub $f: $ty,]
            [$($spec)* (stringify!($f), None, None)] $($rest)*
        }
    };
    // `[rename "json_name"]`: Kafka's name differs from the Rust one.
    (@munch $sa:tt $name:ident $flags:tt [$($out:tt)*] [$($spec:tt)*]
        $(#[$a:meta])* [rename $json:literal] $f:ident : $ty:ty, $($rest:tt)*) => {
        $crate::protocol::message_macro::kafka_message! {
            @munch $sa $name $flags
            [$($out)* $(#[$a])* #[cfg_attr(feature = "json", serde(rename = $json))] pub $f: $ty,]
            [$($spec)* ($json, None, None)] $($rest)*
        }
    };
    // `[since N (until M)]`: `None` where the version lacks it.
    (@munch $sa:tt $name:ident $flags:tt $out:tt $spec:tt
        $(#[$a:meta])* [since $s:literal $(until $u:literal)?] $f:ident : $ty:ty, $($rest:tt)*) => {
        $crate::protocol::message_macro::kafka_message! {
            @push "Option::is_none" { $sa $name $flags $out $spec [$(#[$a])*] $f [$ty] [$s $($u)?] } $($rest)*
        }
    };
    // `[vec since N]`: a tagged array, empty where the version lacks it.
    (@munch $sa:tt $name:ident $flags:tt $out:tt $spec:tt
        $(#[$a:meta])* [vec since $s:literal $(until $u:literal)?] $f:ident : $ty:ty, $($rest:tt)*) => {
        $crate::protocol::message_macro::kafka_message! {
            @push "Vec::is_empty" { $sa $name $flags $out $spec [$(#[$a])*] $f [$ty] [$s $($u)?] } $($rest)*
        }
    };
    // `[tagged_fields]`: the raw tagged fields with a doc of their own (with `[no_tagged_fields]`).
    (@munch $sa:tt $name:ident $flags:tt [$($out:tt)*] $spec:tt
        $(#[$a:meta])* [tagged_fields] $f:ident : $ty:ty, $($rest:tt)*) => {
        $crate::protocol::message_macro::kafka_message! {
            @munch $sa $name $flags
            [$($out)* $(#[$a])* #[cfg_attr(feature = "json", serde(skip_serializing_if = "crate::protocol::tagged::TaggedFields::is_empty"))] pub $f: $ty,]
            $spec $($rest)*
        }
    };
    // `[nullable since N (until M)]`: the path string names N (and M), so it is looked up below.
    (@munch $sa:tt $name:ident $flags:tt $out:tt $spec:tt
        $(#[$a:meta])* [nullable since $s:tt $(until $u:tt)?] $f:ident : $ty:ty, $($rest:tt)*) => {
        $crate::protocol::message_macro::kafka_message! {
            @absent [$s $($u)?] { $sa $name $flags $out $spec [$(#[$a])*] $f [$ty] [$s $($u)?] } $($rest)*
        }
    };

    // The `skip_serializing_if` path of a nullable field added in vN (or in vN–vM only).
    (@absent [1] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<1, _>" $($k)* } };
    (@absent [2] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<2, _>" $($k)* } };
    (@absent [3] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<3, _>" $($k)* } };
    (@absent [4] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<4, _>" $($k)* } };
    (@absent [5] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<5, _>" $($k)* } };
    (@absent [6] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<6, _>" $($k)* } };
    (@absent [7] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<7, _>" $($k)* } };
    (@absent [8] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<8, _>" $($k)* } };
    (@absent [9] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<9, _>" $($k)* } };
    (@absent [10] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<10, _>" $($k)* } };
    (@absent [11] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<11, _>" $($k)* } };
    (@absent [12] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<12, _>" $($k)* } };
    (@absent [13] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<13, _>" $($k)* } };
    (@absent [14] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<14, _>" $($k)* } };
    (@absent [15] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<15, _>" $($k)* } };
    (@absent [16] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent_below::<16, _>" $($k)* } };
    (@absent [0 7] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent::<0, 7, _>" $($k)* } };
    (@absent [1 3] $($k:tt)*) => { $crate::protocol::message_macro::kafka_message! { @push "crate::protocol::json::absent::<1, 3, _>" $($k)* } };

    // A gated field with its `skip_serializing_if` path.
    (@push $skip:literal { $sa:tt $name:ident $flags:tt [$($out:tt)*] [$($spec:tt)*]
        [$(#[$a:meta])*] $f:ident [$ty:ty] [$s:tt $($u:tt)?] } $($rest:tt)*) => {
        $crate::protocol::message_macro::kafka_message! {
            @munch $sa $name $flags
            [$($out)* $(#[$a])* #[cfg_attr(feature = "json", serde(skip_serializing_if = $skip))] pub $f: $ty,]
            [$($spec)* (stringify!($f), Some($s), $crate::protocol::message_macro::kafka_message!(@opt $($u)?))]
            $($rest)*
        }
    };

    (@opt) => { None };
    (@opt $u:tt) => { Some($u) };

    // The end of the field list: the trailing `tagged_fields` by flags, then the struct.
    (@munch $sa:tt $name:ident [] $out:tt $spec:tt) => { $crate::protocol::message_macro::kafka_message! { @tagged " (flexible versions only)" $sa $name [Default] $out $spec } };
    (@munch $sa:tt $name:ident [no_default] $out:tt $spec:tt) => { $crate::protocol::message_macro::kafka_message! { @tagged " (flexible versions only)" $sa $name [] $out $spec } };
    (@munch $sa:tt $name:ident [flexible] $out:tt $spec:tt) => { $crate::protocol::message_macro::kafka_message! { @tagged "" $sa $name [Default] $out $spec } };
    (@munch $sa:tt $name:ident [no_default flexible] $out:tt $spec:tt) => { $crate::protocol::message_macro::kafka_message! { @tagged "" $sa $name [] $out $spec } };
    (@munch $sa:tt $name:ident [no_tagged_fields] $out:tt $spec:tt) => { $crate::protocol::message_macro::kafka_message! { @emit $sa $name [Default] $out $spec } };
    (@munch $sa:tt $name:ident [no_default no_tagged_fields] $out:tt $spec:tt) => { $crate::protocol::message_macro::kafka_message! { @emit $sa $name [] $out $spec } };
    (@tagged $flexible:literal $sa:tt $name:ident $default:tt [$($out:tt)*] $spec:tt) => {
        $crate::protocol::message_macro::kafka_message! {
            @emit $sa $name $default [
                $($out)*
                #[doc = concat!(
                    "Tagged fields kwire does not model, kept raw so they survive a round trip",
                    $flexible,
                    "."
                )]
                #[cfg_attr(feature = "json", serde(skip_serializing_if = "crate::protocol::tagged::TaggedFields::is_empty"))]
                pub tagged_fields: $crate::protocol::tagged::TaggedFields,
            ] $spec
        }
    };
    (@emit [$($sa:tt)*] $name:ident [$($default:ident)?] [$($out:tt)*] $spec:tt) => {
        $($sa)*
        #[derive(Debug, Clone, PartialEq, Eq$(, $default)?)]
        #[cfg_attr(feature = "json", derive(serde::Serialize))]
        pub struct $name {
            $($out)*
        }
        $crate::protocol::message_macro::kafka_message! { @fields $name $spec }
    };

    (@fields $name:ident [$(($n:expr, $s:expr, $u:expr))*]) => {
        #[cfg(test)]
        #[allow(dead_code)]
        impl $name {
            /// The fields as declared, for `messages::field_lists`.
            pub(crate) const FIELDS: &'static [$crate::protocol::message_macro::MessageField] = &[
                $($crate::protocol::message_macro::MessageField { name: $n, since: $s, until: $u },)*
            ];
        }
    };
}

pub(crate) use kafka_message;
