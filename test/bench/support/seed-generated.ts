/** Creates a workspace of generated leads in a data folder and leaves it as the open session, so the
 * app started on that folder shows it at once. Usage: tsx seed-generated.ts <dataDir> <leads> */
import { createDesktopBackend } from '../../../electron/backend/desktop.ts';
import { generatedWorkspace } from '../../e2e/support/generated-workspace.ts';

const [dataDir, count] = process.argv.slice(2);
if (!dataDir || !count) {
  console.error('usage: seed-generated.ts <dataDir> <leads>');
  process.exit(2);
}
const started = performance.now();
const backend = await createDesktopBackend({
  dataDir,
  log: () => undefined,
  session: { buildDemo: () => generatedWorkspace({ leads: Number(count), now: new Date() }), startRunner: undefined },
});
await backend.session.openDemo();
await backend.close();
console.log(JSON.stringify({ seconds: (performance.now() - started) / 1000 }));
