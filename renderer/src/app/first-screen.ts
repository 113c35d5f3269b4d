/** "The first screen has drawn its data": said by that screen, heard by whoever waits for it to do
 * work that must not delay the first screen (loading the other screens' code, screens.ts). */
let shown = false;
const waiting = new Set<() => void>();

export function firstScreenShown(): void {
  if (shown) return;
  shown = true;
  for (const run of waiting) run();
  waiting.clear();
}

export function afterFirstScreen(run: () => void): void {
  if (shown) run();
  else waiting.add(run);
}
