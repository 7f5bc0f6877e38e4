//! Sizes in bytes as people write them in recipes: `"8GiB"`, `"512 MiB"`, `"1.5GB"`, `4096`.

/// Bytes of `text`: a number with an optional unit — `B`, `KB`/`MB`/`GB`/`TB` (powers of
/// 1000), `KiB`/`MiB`/`GiB`/`TiB` (powers of 1024); case-insensitive, spaces allowed.
pub fn parse_byte_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = (t[..split].trim(), t[split..].trim());
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size: expected e.g. \"8GiB\" or \"512MB\""))?;
    let scale: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0f64.powi(4),
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}` (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)"
            ));
        }
    };
    let bytes = value * scale;
    if !(bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(format!("`{text}` must be at least 1 byte"));
    }
    Ok(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::parse_byte_size;

    #[test]
    fn sizes_parse_with_binary_and_decimal_units() {
        assert_eq!(parse_byte_size("8GiB"), Ok(8 << 30));
        assert_eq!(parse_byte_size("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_byte_size("1.5GB"), Ok(1_500_000_000));
        assert_eq!(parse_byte_size("4096"), Ok(4096));
        assert_eq!(parse_byte_size("2kib"), Ok(2048));
        assert!(
            parse_byte_size("8 parsecs")
                .unwrap_err()
                .contains("unknown unit")
        );
        assert!(parse_byte_size("GiB").is_err());
        assert!(parse_byte_size("0").is_err());
    }
}
