/**
 * The UTF-8 byte order mark some proxies put before a body. RFC 8259 §8.1: JSON must not carry one, and a
 * parser may ignore it; Keyward ignores it before a JSON body (the envelope routes, a raw JSON payload).
 */
const BOM = [0xef, 0xbb, 0xbf] as const;

/** `bytes` without a leading UTF-8 byte order mark (the same memory, not a copy). Pure. */
export function withoutBom(bytes: Buffer): Buffer {
  return bytes.length >= 3 && bytes[0] === BOM[0] && bytes[1] === BOM[1] && bytes[2] === BOM[2] ? bytes.subarray(3) : bytes;
}
