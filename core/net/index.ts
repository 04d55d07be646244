/**
 * Outbound HTTP for user-given URLs, behind the SSRF guard.
 *
 * - Only http: and https:. Credentials in the URL are refused.
 * - Every address a name resolves to is checked at connect time (a custom `lookup`), so a name
 *   that resolves to a private address, or re-resolves to one (DNS rebinding), is refused; IP
 *   literals in any spelling the URL parser accepts (`0x7f.1`, `2130706433`, `[::ffff:127.0.0.1]`)
 *   are normalised by it and checked the same way.
 * - Refused: loopback, private (RFC 1918, CGNAT, ULA), link-local (incl. 169.254.169.254
 *   metadata), multicast, reserved and documentation ranges, IPv4-mapped and NAT64 forms of those.
 * - Redirects are followed by hand (at most `maxRedirects`), each hop checked again.
 * - A whole-request deadline and a response size cap apply.
 * The operator's allow-list (TRELLIS_OUTBOUND_ALLOW: hosts and CIDRs) lets chosen private
 * destinations through, e.g. an internal API or a test peer on 127.0.0.1.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { Readable, Transform } from 'node:stream';
import { defineError } from '../errors/index.ts';

export interface SafeFetchOptions {
  /** Whole-request deadline, default 30 s. */
  timeoutMs?: number;
  /** Largest response body; reading past it errors. Default 50 MiB. */
  maxBytes?: number;
  /** Default 5; every hop is checked again. */
  maxRedirects?: number;
}

export type SafeFetch = (url: string | URL, init?: RequestInit & SafeFetchOptions) => Promise<Response>;

export const SsrfBlockedError = defineError('ssrf_blocked', 400, 'The URL points to an address that is not allowed.');
export const OutboundError = defineError('outbound_request_failed', 502, 'The outbound request failed.');

const blocked = new net.BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) blocked.addSubnet(addr, prefix, 'ipv4');
for (const [addr, prefix] of [
  ['::', 128], ['::1', 128], ['100::', 64], ['2001:db8::', 32], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) blocked.addSubnet(addr, prefix, 'ipv6');

const BLOCKED_NAMES = new Set(['localhost', 'metadata', 'metadata.google.internal', 'instance-data']);

/** Expands an IPv6 address to 8 16-bit groups. */
function v6Groups(addr: string): number[] | undefined {
  let a = addr.split('%')[0];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (v4) {
    const p = v4[1].split('.').map(Number);
    a = a.slice(0, -v4[1].length) + `${((p[0] << 8) | p[1]).toString(16)}:${((p[2] << 8) | p[3]).toString(16)}`;
  }
  const [head, tail] = a.split('::');
  const h = head ? head.split(':') : [];
  const t = tail !== undefined ? (tail ? tail.split(':') : []) : [];
  const fill = tail !== undefined ? 8 - h.length - t.length : 0;
  const groups = [...h, ...Array(fill).fill('0'), ...t].map((g) => parseInt(g, 16));
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

/** The IPv4 address embedded in an IPv4-mapped (::ffff:a.b.c.d), compatible or NAT64 IPv6 address. */
function embeddedV4(addr: string): string | undefined {
  const g = v6Groups(addr);
  if (!g) return undefined;
  const mapped = g.slice(0, 5).every((x) => x === 0) && (g[5] === 0xffff || g[5] === 0);
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0);
  if (!mapped && !nat64) return undefined;
  if (mapped && g[5] === 0 && g[6] === 0) return undefined; // :: and ::1 are handled as IPv6
  return `${g[6] >> 8}.${g[6] & 0xff}.${g[7] >> 8}.${g[7] & 0xff}`;
}

export interface AllowList {
  hosts: Set<string>;
  nets: net.BlockList;
}

export function parseAllowList(entries: string[]): AllowList {
  const hosts = new Set<string>();
  const nets = new net.BlockList();
  for (const raw of entries) {
    const e = raw.trim().toLowerCase();
    if (!e) continue;
    const [ip, bits] = e.split('/');
    const type = net.isIP(ip);
    if (type) nets.addSubnet(ip, bits ? Number(bits) : type === 4 ? 32 : 128, type === 4 ? 'ipv4' : 'ipv6');
    else hosts.add(e);
  }
  return { hosts, nets };
}

/** Whether an IP address may be contacted. */
export function isAllowedAddress(address: string, allow: AllowList): boolean {
  const type = net.isIP(address);
  if (!type) return false;
  const family = type === 4 ? 'ipv4' : 'ipv6';
  if (allow.nets.check(address, family)) return true;
  if (type === 6) {
    const v4 = embeddedV4(address);
    if (v4) return allow.nets.check(v4, 'ipv4') || !blocked.check(v4, 'ipv4');
  }
  return !blocked.check(address, family);
}

function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
}

/** Checks a URL before connecting; the resolved addresses are checked again at connect time. */
export function checkUrl(url: URL, allow: AllowList): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new SsrfBlockedError(`The URL scheme '${url.protocol}' is not allowed; use http or https.`);
  if (url.username || url.password) throw new SsrfBlockedError('URLs with embedded credentials are not allowed.');
  const host = hostOf(url);
  if (allow.hosts.has(host)) return;
  if (net.isIP(host)) {
    if (!isAllowedAddress(host, allow)) throw new SsrfBlockedError(`The address ${host} is not allowed (private, loopback, link-local or reserved).`);
    return;
  }
  if (BLOCKED_NAMES.has(host) || host.endsWith('.localhost') || host.endsWith('.internal')) {
    throw new SsrfBlockedError(`The host '${host}' is not allowed.`);
  }
}

type LookupCb = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

export type Resolver = (hostname: string, options: dns.LookupAllOptions, cb: (err: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void) => void;

function guardedLookup(allow: AllowList, host: string, resolve: Resolver) {
  return (hostname: string, options: dns.LookupOptions, cb: LookupCb) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return cb(err, '', 0);
      const list = addresses as dns.LookupAddress[];
      const bad = allow.hosts.has(host) ? undefined : list.find((a) => !isAllowedAddress(a.address, allow));
      if (bad || list.length === 0) {
        const e = new SsrfBlockedError(`The host '${hostname}' resolves to ${bad?.address ?? 'nothing'}, which is not allowed.`) as unknown as NodeJS.ErrnoException;
        return cb(e, '', 0);
      }
      if (options.all) return cb(null, list);
      cb(null, list[0].address, list[0].family);
    });
  };
}

async function bodyToBuffer(body: RequestInit['body']): Promise<Buffer | Readable | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof URLSearchParams) return Buffer.from(body.toString());
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof Blob) return Buffer.from(await body.arrayBuffer());
  if (body instanceof ReadableStream) return Readable.fromWeb(body as never);
  throw new TypeError('Unsupported request body type');
}

/**
 * @param opts.allow operator allow-list (hosts and CIDRs)
 * @param opts.resolver name resolution, `dns.lookup` by default (tests pass a resolver that
 *   answers private addresses for public-looking names)
 */
export function createSafeFetch(opts: { allow?: string[]; userAgent?: string; resolver?: Resolver } = {}): SafeFetch {
  const allow = parseAllowList(opts.allow ?? []);
  const resolver: Resolver = opts.resolver ?? ((h, o, cb) => dns.lookup(h, o, cb));
  const ua = opts.userAgent ?? 'Trellis/1 (+outbound)';

  return async function safeFetch(input, init = {}) {
    const timeoutMs = init.timeoutMs ?? 30_000;
    const maxBytes = init.maxBytes ?? 50 * 1024 * 1024;
    const maxRedirects = init.maxRedirects ?? 5;
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, deadline]) : deadline;
    let url = new URL(String(input));
    let method = (init.method ?? 'GET').toUpperCase();
    const headers = new Headers(init.headers);
    if (!headers.has('user-agent')) headers.set('user-agent', ua);
    let body = await bodyToBuffer(init.body);

    for (let hop = 0; ; hop++) {
      checkUrl(url, allow);
      const host = hostOf(url);
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const mod = url.protocol === 'https:' ? https : http;
        const req = mod.request(url, {
          method,
          headers: Object.fromEntries(headers),
          lookup: guardedLookup(allow, host, resolver) as never,
          signal,
          // A fresh connection per request: a pooled socket could be one opened before a
          // re-resolution and would skip the address check.
          agent: false,
        });
        req.on('response', resolve);
        req.on('error', reject);
        if (body instanceof Readable) body.pipe(req);
        else req.end(body);
      }).catch((err: unknown) => {
        if ((err as { code?: string }).code === 'ssrf_blocked') throw err;
        if (deadline.aborted) throw new OutboundError(`The request to ${url.host} timed out after ${timeoutMs} ms.`, { reason: 'timeout' });
        if (init.signal?.aborted) throw err;
        throw new OutboundError(`The request to ${url.host} failed: ${(err as Error).message}`, { reason: 'network' });
      });

      const status = res.statusCode ?? 502;
      const location = res.headers.location;
      if ([301, 302, 303, 307, 308].includes(status) && location && init.redirect !== 'manual') {
        res.resume();
        if (init.redirect === 'error') throw new OutboundError(`Redirected to ${location}, and redirects are refused.`, { reason: 'redirect' });
        if (hop >= maxRedirects) throw new OutboundError(`Too many redirects (more than ${maxRedirects}).`, { reason: 'redirects' });
        if (body instanceof Readable && status !== 303) throw new OutboundError('Cannot follow a redirect with a streamed body.', { reason: 'redirect' });
        url = new URL(location, url);
        if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
          method = 'GET';
          body = undefined;
          headers.delete('content-type');
          headers.delete('content-length');
        }
        continue;
      }

      let seen = 0;
      const limited = res.pipe(
        new Transform({
          transform(chunk: Buffer, _enc, cb) {
            seen += chunk.length;
            if (seen > maxBytes) cb(new OutboundError(`The response is larger than ${maxBytes} bytes.`, { reason: 'too_large' }));
            else cb(null, chunk);
          },
        }),
      );
      res.on('error', (err) => limited.destroy(err));
      const responseHeaders = new Headers();
      for (const [k, v] of Object.entries(res.headers)) {
        if (Array.isArray(v)) for (const x of v) responseHeaders.append(k, x);
        else if (v !== undefined) responseHeaders.set(k, v);
      }
      const nullBody = method === 'HEAD' || status === 204 || status === 304;
      if (nullBody) limited.resume();
      const response = new Response(nullBody ? null : (Readable.toWeb(limited) as ReadableStream), {
        status: status < 200 || status > 599 ? 502 : status,
        statusText: res.statusMessage,
        headers: responseHeaders,
      });
      Object.defineProperty(response, 'url', { value: url.toString() });
      return response;
    }
  };
}
