//! Byte layouts of the log's keys (see `docs/format.md`). All integers are
//! big-endian so that byte order equals numeric order.

use crate::id::RecordId;
use crate::record::RecordKind;

/// Keyspace names.
pub(crate) const RECORDS: &str = "records";
pub(crate) const IDS: &str = "ids";
pub(crate) const KINDS: &str = "kinds";
pub(crate) const THREADS: &str = "threads";
pub(crate) const HEADS: &str = "heads";
pub(crate) const EXTERNAL: &str = "external";
pub(crate) const META: &str = "meta";
pub(crate) const CHILDREN: &str = "children";
pub(crate) const VIEWS: &str = "views";
pub(crate) const MODEL_CALLS: &str = "model_calls";

/// Longest tenant, thread or external id accepted, in bytes.
pub const MAX_NAME_BYTES: usize = 1024;

/// `records` key: the sequence number.
pub(crate) fn seq_key(seq: u64) -> [u8; 8] {
    seq.to_be_bytes()
}

/// Decodes an 8-byte big-endian sequence number.
pub(crate) fn decode_seq(bytes: &[u8]) -> Option<u64> {
    <[u8; 8]>::try_from(bytes).ok().map(u64::from_be_bytes)
}

/// `kinds` key: `[kind][seq]`.
pub(crate) fn kind_key(kind: RecordKind, seq: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = kind.code();
    k[1..].copy_from_slice(&seq.to_be_bytes());
    k
}

/// Prefix naming one thread: `[u16 len][tenant][u16 len][thread]`.
/// Callers keep names under [`MAX_NAME_BYTES`]; longer names are cut there.
pub(crate) fn thread_prefix(tenant: &str, thread: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + tenant.len() + thread.len());
    push_name(&mut k, tenant);
    push_name(&mut k, thread);
    k
}

fn push_name(k: &mut Vec<u8>, name: &str) {
    let bytes = name.as_bytes();
    let bytes = bytes.get(..MAX_NAME_BYTES).unwrap_or(bytes);
    let len = u16::try_from(bytes.len()).unwrap_or(u16::MAX);
    k.extend_from_slice(&len.to_be_bytes());
    k.extend_from_slice(bytes);
}

/// Splits a `heads` key back into (tenant, thread).
pub(crate) fn parse_thread_prefix(key: &[u8]) -> Option<(String, String)> {
    let (tenant, rest) = read_name(key)?;
    let (thread, rest) = read_name(rest)?;
    rest.is_empty().then_some((tenant, thread))
}

fn read_name(bytes: &[u8]) -> Option<(String, &[u8])> {
    let (len, rest) = bytes.split_first_chunk::<2>()?;
    let len = usize::from(u16::from_be_bytes(*len));
    let name = rest.get(..len)?;
    Some((String::from_utf8(name.to_vec()).ok()?, rest.get(len..)?))
}

/// `threads` key: thread prefix + seq.
pub(crate) fn thread_seq_key(prefix: &[u8], seq: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + 8);
    k.extend_from_slice(prefix);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// `threads` value: `[kind][id]`.
pub(crate) fn thread_value(kind: RecordKind, id: &RecordId) -> [u8; 33] {
    let mut v = [0u8; 33];
    v[0] = kind.code();
    v[1..].copy_from_slice(id.as_bytes());
    v
}

/// `children` key: parent id + child seq.
pub(crate) fn child_key(parent: &RecordId, seq: u64) -> [u8; 40] {
    let mut k = [0u8; 40];
    k[..32].copy_from_slice(parent.as_bytes());
    k[32..].copy_from_slice(&seq.to_be_bytes());
    k
}

/// `external` key: thread prefix + external id bytes.
pub(crate) fn external_key(prefix: &[u8], external_id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(prefix.len() + external_id.len());
    k.extend_from_slice(prefix);
    k.extend_from_slice(external_id.as_bytes());
    k
}

/// `meta` key holding the count of one record kind.
pub(crate) fn count_key(kind: RecordKind) -> Vec<u8> {
    format!("count/{}", kind.name()).into_bytes()
}

/// `views` key: `[u16 len][view name][u16 len][tenant]`.
pub(crate) fn view_key(view: &str, tenant: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 + view.len() + tenant.len());
    push_name(&mut k, view);
    push_name(&mut k, tenant);
    k
}

/// `views` key of chunk `index` of a chunked view state: the view's key
/// followed by `[u32 BE index]`. The names are length-prefixed, so no other
/// view's key is equal to it or a prefix of it.
pub(crate) fn view_chunk_key(view: &str, tenant: &str, index: u32) -> Vec<u8> {
    let mut k = view_key(view, tenant);
    k.extend_from_slice(&index.to_be_bytes());
    k
}

/// `meta` key of the index watermark: the last sequence whose entries the
/// index keyspaces hold (`[u64 BE]`).
pub(crate) const WATERMARK_KEY: &[u8] = b"index/watermark";

/// `meta` key of a configuration entry.
pub(crate) fn config_key(name: &str) -> Vec<u8> {
    format!("config/{name}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_prefix_round_trips_and_is_unambiguous() {
        let a = thread_prefix("ab", "c");
        let b = thread_prefix("a", "bc");
        assert_ne!(a, b);
        assert_eq!(parse_thread_prefix(&a), Some(("ab".into(), "c".into())));
        assert_eq!(
            parse_thread_prefix(&thread_prefix("", "t")),
            Some((String::new(), "t".into()))
        );
    }

    #[test]
    fn seq_keys_sort_numerically() {
        assert!(seq_key(2) < seq_key(10));
        assert!(seq_key(255) < seq_key(256));
        assert_eq!(decode_seq(&seq_key(77)), Some(77));
    }
}
