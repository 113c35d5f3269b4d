/** While a workspace opens and its data moves, once, into the current storage format: how far it is. */
import type { SessionInfo } from '../../../../electron/bridge.ts';

type Opening = Extract<SessionInfo, { state: 'opening' }>;

const count = (n: number): string => n.toLocaleString();

export function Opening({ session }: { session: Opening }) {
  const { done, total, indexing } = session.migration;
  return (
    <div className="first-run">
      <div className="box" style={{ width: 'min(520px, 94vw)' }}>
        <h1 style={{ fontSize: 20 }}>Opening {session.workspaceName}</h1>
        <p className="muted">
          This version keeps your data in a new format, which opens large workspaces at once. Your data is moved over once; nothing is lost and
          nothing leaves this machine.
        </p>
        <div className="progress" role="progressbar" aria-label="Moving the workspace's data" aria-valuenow={done} aria-valuemin={0} aria-valuemax={total}>
          <div style={{ width: `${total > 0 ? Math.round((100 * done) / total) : 0}%` }} />
        </div>
        <p className="faint" aria-live="polite">{indexing ? `Building the indexes of ${count(total)} documents…` : `${count(done)} of ${count(total)} documents moved…`}</p>
      </div>
    </div>
  );
}
