/**
 * Secrets at rest, tokens, hashes and ids.
 *
 * - `SecretBox`: AES-256-GCM with a key derived (HKDF) from TRELLIS_SECRET_KEY; ciphertexts are
 *   `v1.<iv>.<tag>.<data>` (base64url) so a key rotation can add `v2` later.
 * - Passwords: argon2id through `node:crypto` (Node >= 24.7), stored as a PHC string.
 * - Tokens: random base64url; hashes: SHA-256 hex; comparisons: constant time.
 */
import { argon2, createCipheriv, createHmac, createDecipheriv, createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const argon2Async = promisify(argon2);

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function sha256Hex(input: string | Buffer): string {
  return createHash('sha256').update(input).digest('hex');
}

/** Constant-time string comparison (lengths compared through their hashes so nothing leaks). */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

/** A time-ordered UUID (v7): ids sort by creation, which keeps B-tree inserts local. */
export function uuidv7(): string {
  const bytes = randomBytes(16);
  const ms = BigInt(Date.now());
  for (let i = 0; i < 6; i++) bytes[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const h = bytes.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** A prefixed id such as `usr_0193…` (the spec's "prefixed string" ids). */
export function prefixedId(prefix: string): string {
  return `${prefix}_${uuidv7().replace(/-/g, '')}`;
}

// ---------------------------------------------------------------------------------------------
// Passwords

const ARGON = { parallelism: 1, tagLength: 32, memory: 19456, passes: 2 } as const;

export async function hashPassword(password: string): Promise<string> {
  const nonce = randomBytes(16);
  const hash = await argon2Async('argon2id', { message: password, nonce, ...ARGON });
  return `$argon2id$v=19$m=${ARGON.memory},t=${ARGON.passes},p=${ARGON.parallelism}$${nonce.toString('base64url')}$${hash.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9_-]+)\$([A-Za-z0-9_-]+)$/.exec(stored);
  if (!m) return false;
  const expected = Buffer.from(m[5], 'base64url');
  const actual = await argon2Async('argon2id', {
    message: password,
    nonce: Buffer.from(m[4], 'base64url'),
    memory: Number(m[1]),
    passes: Number(m[2]),
    parallelism: Number(m[3]),
    tagLength: expected.length,
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** A hash with the same cost as a real one, to verify against when the user does not exist. */
export const DUMMY_PASSWORD_HASH =
  '$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$0vW0e3mB0pR8uFq2m8v8w7n0U9m9c6zQmK3c1p3E5eU';

// ---------------------------------------------------------------------------------------------
// Secrets at rest

export class SecretBox {
  readonly #key: Buffer;

  constructor(secret: string) {
    this.#key = Buffer.from(hkdfSync('sha256', secret, 'trellis', 'secret-box-v1', 32));
  }

  encrypt(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `v1.${iv.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}.${data.toString('base64url')}`;
  }

  decrypt(box: string): string {
    const [v, iv, tag, data] = box.split('.');
    if (v !== 'v1' || !iv || !tag || data === undefined) throw new Error('Unrecognised secret format');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  }

  /** Keyed digest (HMAC-SHA256) for secrets that must be looked up but never stored in clear. */
  digest(value: string): string {
    return createHmac('sha256', this.#key).update(value).digest('hex');
  }
}
