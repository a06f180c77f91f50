//! Lower-case hex for IDs, tokens and keys that travel as text (environment variables,
//! command lines, files).

/// `bytes` as lower-case hex.
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of an even-length hex string; `None` if it is not one.
pub fn decode(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || !s.is_ascii() {
        return None;
    }
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()).collect()
}

/// Exactly `N` bytes from `2 * N` hex digits; `None` otherwise.
pub fn decode_array<const N: usize>(s: &str) -> Option<[u8; N]> {
    decode(s)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_what_is_not_hex() {
        assert_eq!(encode(&[0, 0xab, 7]), "00ab07");
        assert_eq!(decode_array::<3>("00ab07"), Some([0, 0xab, 7]));
        assert_eq!(decode_array::<2>("00ab07"), None);
        assert_eq!(decode("0g"), None);
        assert_eq!(decode("abc"), None);
        assert_eq!(decode("é1"), None);
    }
}
