/** An operation's refusal, in words, placed next to the control that caused it. */
export function ErrorText({ error, id }: { error: string | null | undefined; id?: string }) {
  if (!error) return null;
  return (
    <div className="error-text" role="alert" id={id}>
      {error}
    </div>
  );
}
