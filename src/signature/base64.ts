/** Base64 with padding (RFC 4648 section 4), checked without a backtracking pattern. */

const ALPHABET = /^[A-Za-z0-9+/]*={0,2}$/;

export function isBase64(text: string): boolean {
  return text.length % 4 === 0 && ALPHABET.test(text);
}
