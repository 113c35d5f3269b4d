/** A pipeline stage as a colored pill; unstaged leads show as "New". */
export function StagePill({ stage }: { stage: { name: string; colorHex: string } | null }) {
  const s = stage ?? { name: 'New', colorHex: '#94a3b8' };
  return (
    <span className="pill" title={s.name}>
      <span className="dot" style={{ background: s.colorHex }} />
      {s.name}
    </span>
  );
}

export function TagPill({ tag }: { tag: { name: string; color: string } | undefined }) {
  if (!tag) return <span className="faint">—</span>;
  return (
    <span className="pill" style={{ background: `${tag.color}22`, color: '#1f2937' }}>
      <span className="dot" style={{ background: tag.color }} />
      {tag.name}
    </span>
  );
}
