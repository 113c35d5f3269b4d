import { Dialog } from '../components/Dialog.tsx';
import { useApp } from '../state/app-store.ts';
import { SHORTCUTS } from './shortcuts.ts';

export function ShortcutsHelp() {
  const setHelp = useApp((s) => s.setHelp);
  return (
    <Dialog title="Keyboard shortcuts" onClose={() => setHelp(false)}>
      <table className="plain">
        <tbody>
          {SHORTCUTS.map((s) => (
            <tr key={s.keys}>
              <td style={{ width: 160 }}><kbd>{s.keys}</kbd></td>
              <td>{s.what}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Dialog>
  );
}
