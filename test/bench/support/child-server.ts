/** A benchmark's server in a process of its own (as in production): `script` started again with
 * `env` on a loopback port, ready once `probe` answers; stopped with SIGTERM as an operator would. */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';

export async function startChildServer(script: string, env: Record<string, string>, probe: string): Promise<{ proc: ChildProcess; url: string }> {
  // A port drawn at random can be taken meanwhile (another test's server or an outgoing connection's
  // ephemeral port): the server then exits with 3 (the CLI's "port in use"), and another is drawn.
  for (let attempt = 0; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const proc = spawn(process.execPath, ['--import', 'tsx', script], { env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 'inherit', 'inherit'] });
    const url = `http://127.0.0.1:${port}`;
    let portTaken = false;
    for (let i = 0; i < 600 && !portTaken; i++) {
      if (proc.exitCode === 3 && attempt < 4) portTaken = true;
      else if (proc.exitCode !== null) throw new Error(`the server (${JSON.stringify(env)}) exited with ${proc.exitCode}`);
      else {
        try {
          if ((await fetch(url + probe)).ok) return { proc, url };
        } catch {
          // Not up yet.
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    if (portTaken) continue;
    proc.kill('SIGKILL');
    throw new Error(`the server (${JSON.stringify(env)}) did not start`);
  }
}

export async function stopChildServer(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null) return;
  const exited = new Promise((r) => proc.on('close', r));
  proc.kill('SIGTERM');
  await exited;
}
