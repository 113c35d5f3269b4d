/** A page for window-keys.test.ts: a screen whose list arrives like a live answer (outside any input
 * event, so React draws it at its default priority and runs effects in a later task), with a key
 * handler on the window that records what the screen held when the key came; and the app's Dialog
 * under an owner that draws a new onClose at each render, as the screens do. */
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { Dialog } from '../../../renderer/src/components/Dialog.tsx';
import { useWindowKeydown } from '../../../renderer/src/lib/window-keys.ts';

export type Probe = {
  /** What each key saw: `key:items`. */
  seen: string[];
  /** Mounts the screen from a timer, as a screen opens after its chunk loads. */
  mount(): void;
  /** Sets the list from a timer, as a live answer arrives. */
  arrive(items: string[]): void;
  /** Opens the dialog, draws its owner again (a new onClose each time), and which render closed it. */
  openDialog(): void;
  redrawOwner(): void;
  closedByRender: number | null;
};

/** A render as slow as a long list's on a loaded machine: React yields to the browser after it. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

let setList: (items: string[]) => void = () => undefined;

function Screen() {
  const [items, setItems] = useState<string[]>([]);
  setList = setItems;
  busy(20);
  useWindowKeydown((e) => {
    probe.seen.push(`${e.key}:${items.join(',')}`);
  });
  return (
    <ul aria-label="items">
      {items.map((i) => <li key={i}>{i}</li>)}
    </ul>
  );
}

let redraw: () => void = () => undefined;

function DialogOwner() {
  const [render, setRender] = useState(0);
  const [open, setOpen] = useState(true);
  redraw = () => setRender((n) => n + 1);
  if (!open) return null;
  return (
    <Dialog
      title="New lead"
      onClose={() => {
        probe.closedByRender = render;
        setOpen(false);
      }}
    >
      <input aria-label="First name" />
      <input aria-label="Last name" />
      <output aria-label="Owner renders">{render}</output>
    </Dialog>
  );
}

const root = createRoot(document.getElementById('root') as HTMLElement);
const dialogRoot = createRoot(document.getElementById('dialog-root') as HTMLElement);
const probe: Probe = {
  seen: [],
  mount: () => setTimeout(() => root.render(<Screen />)),
  arrive: (items) => setTimeout(() => setList(items)),
  openDialog: () => dialogRoot.render(<DialogOwner />),
  redrawOwner: () => setTimeout(() => redraw()),
  closedByRender: null,
};
// On the page's window for the test (not declared on Window: the renderer's types would see it).
(window as unknown as { probe: Probe }).probe = probe;
