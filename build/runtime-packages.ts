/** The npm packages a bundle imports at run time: esbuild leaves node_modules outside the bundle
 * (scripts/build-app.ts), so each must be in the installed app. Used by `npm run dist -- --check` and
 * test/electron/packaging.test.ts. */
import { readFileSync } from 'node:fs';

export function runtimePackages(bundle: string): string[] {
  const text = readFileSync(bundle, 'utf8');
  const specifiers = [...text.matchAll(/(?:^|\n)import\s[^;]*?from\s*"([^"]+)"|import\(\s*"([^"]+)"\s*\)|require\(\s*"([^"]+)"\s*\)/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? '');
  const bare = specifiers.filter((s) => s !== '' && !s.startsWith('node:') && !s.startsWith('.') && !s.startsWith('/') && s !== 'electron');
  return [...new Set(bare.map((s) => s.split('/').slice(0, s.startsWith('@') ? 2 : 1).join('/')))].sort();
}
