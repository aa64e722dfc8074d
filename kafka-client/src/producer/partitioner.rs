//! The Java client's key partitioner: `toPositive(murmur2(key)) % numPartitions`, so a record
//! produced by kwire with a key lands on the same partition as one produced by any Java (or
//! librdkafka `murmur2_random`) producer with that key. Pure functions: no state, no IO.

/// Kafka's `Utils.murmur2`: 32-bit MurmurHash2 with seed `0x9747b28c`, reading the input as
/// little-endian 4-byte words and folding the 1–3 byte tail the way Java's `switch` falls
/// through. Bit-for-bit the Java result, as a signed `i32` like Java's `int`.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    // Java computes `seed ^ length` on an int; lengths past i32::MAX cannot be Java arrays,
    // and truncating matches what Java would do if they could.
    let mut h: u32 = SEED ^ (data.len() as u32);
    let mut words = data.chunks_exact(4);
    for word in &mut words {
        let mut k = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = words.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if let Some(&first) = tail.first() {
        h ^= u32::from(first);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// Kafka's `Utils.toPositive`: clears the sign bit (not `abs`, which overflows on
/// `i32::MIN`).
pub fn to_positive(n: i32) -> i32 {
    n & 0x7fff_ffff
}

/// The partition the Java client's default partitioner picks for a non-null `key` among
/// `num_partitions` partitions, or `None` when `num_partitions` is not positive.
pub fn partition_for_key(key: &[u8], num_partitions: i32) -> Option<i32> {
    (num_partitions > 0).then(|| to_positive(murmur2(key)) % num_partitions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Printed by `org.apache.kafka.common.utils.Utils.murmur2` from kafka-clients 4.1.1 for
    /// each key's UTF-8 bytes; the inputs cover every tail length (0–3 bytes) and more than
    /// one 4-byte word.
    const JAVA_VECTORS: &[(&str, i32)] = &[
        ("", 275_646_681),
        ("a", -1_563_381_124),
        ("ab", 316_155_434),
        ("abc", 479_470_107),
        ("abcd", -1_323_649_548),
        ("kafka", -798_503_068),
        ("hello world", 1_221_641_059),
        ("21", -973_932_308),
        ("foobar", -790_332_482),
        ("key-0", 29_210_041),
        ("key-3", -1_839_136_101),
    ];

    #[test]
    fn hashes_equal_what_the_java_client_computes() {
        for (key, expected) in JAVA_VECTORS {
            assert_eq!(murmur2(key.as_bytes()), *expected, "murmur2({key:?})");
        }
    }

    #[test]
    fn bytes_above_0x7f_are_not_sign_extended_into_the_hash() {
        // Java reads `data[i] & 0xff`; a port that sign-extends gets a different number here.
        assert_eq!(murmur2(&[0xff, 0x80, 0x00, 0x01, 0x02, 0xfe, 0x07]), 2_030_958_405);
    }

    #[test]
    fn keys_land_where_the_java_partitioner_puts_them() {
        // toPositive(murmur2(key)) % n, from the same Java run.
        let cases: &[(&str, i32, i32)] = &[
            ("kafka", 12, 4),
            ("", 12, 9),
            ("abc", 12, 3),
            ("abcd", 12, 8),
            ("key-3", 12, 11),
            ("key-1", 12, 0),
            ("key-2", 3, 2),
            ("a", 3, 1),
        ];
        for (key, n, expected) in cases {
            assert_eq!(partition_for_key(key.as_bytes(), *n), Some(*expected), "{key:?} over {n}");
        }
    }

    #[test]
    fn negative_hashes_map_by_clearing_the_sign_bit() {
        assert_eq!(to_positive(-798_503_068), 1_348_980_580);
        assert_eq!(to_positive(i32::MIN), 0);
        assert_eq!(to_positive(-1), i32::MAX);
    }

    #[test]
    fn no_partitions_means_no_partition() {
        assert_eq!(partition_for_key(b"k", 0), None);
        assert_eq!(partition_for_key(b"k", -3), None);
    }
}
