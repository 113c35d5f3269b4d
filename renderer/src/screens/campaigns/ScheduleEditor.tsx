/** The sending schedule: a time zone and a window per day. A window whose start is not before its end,
 * or a week with no day on, is flagged as it is typed and refused on save with the reason. Allowed
 * while the campaign runs: the new window applies from the next send. */
import { useMemo, useState } from 'react';
import type { OpOutput } from '../../../../shared/ops/index.ts';
import { DAYS } from '../../../../shared/model/common.ts';
import type { Day } from '../../../../shared/model/common.ts';
import { ErrorText } from '../../components/ErrorText.tsx';
import { run, useAction } from '../../lib/ops.ts';
import { useApp } from '../../state/app-store.ts';
import { DAY_LABELS, utcOffset } from './format.ts';

type Schedule = OpOutput<'campaigns.get'>['schedule'];
type Window = Schedule['days'][Day];

function zones(): string[] {
  try {
    return Intl.supportedValuesOf('timeZone');
  } catch {
    return ['UTC'];
  }
}

/** Times are typed and shown as 24-hour HH:MM, like every message about them (a browser's time input
 * would follow its locale and show 6:00 PM beside "starts at 18:00"). The end may be 24:00. */
const START_TIME = /^([01]\d|2[0-3]):[0-5]\d$/;
const END_TIME = /^(([01]\d|2[0-3]):[0-5]\d|24:00)$/;

/** What is wrong with one day's window, in words (null when fine). */
export function windowProblem(w: Window): string | null {
  if (!w.enabled) return null;
  if (!START_TIME.test(w.start)) return `“${w.start}” is not a 24-hour start time: use HH:MM, e.g. 09:00.`;
  if (!END_TIME.test(w.end)) return `“${w.end}” is not a 24-hour end time: use HH:MM, e.g. 17:30, or 24:00 for midnight.`;
  if (!(w.start < w.end)) return `Starts at ${w.start}, which is not before its end ${w.end}.`;
  return null;
}

export function ScheduleEditor({ campaignId, schedule, running }: { campaignId: string; schedule: Schedule; running: boolean }) {
  const toast = useApp((s) => s.toast);
  const [draft, setDraft] = useState<Schedule>(schedule);
  const action = useAction();
  const allZones = useMemo(zones, []);
  const changed = JSON.stringify({ t: draft.timeZone, d: draft.days }) !== JSON.stringify({ t: schedule.timeZone, d: schedule.days });
  const noDay = !DAYS.some((d) => draft.days[d].enabled);
  const unknownZone = !allZones.includes(draft.timeZone) && draft.timeZone !== 'UTC';

  const setDay = (day: Day, patch: Partial<Window>) => setDraft((s) => ({ ...s, days: { ...s.days, [day]: { ...s.days[day], ...patch } } }));

  async function save() {
    const days: Partial<Record<Day, Window>> = {};
    for (const d of DAYS) if (JSON.stringify(draft.days[d]) !== JSON.stringify(schedule.days[d])) days[d] = draft.days[d];
    const r = await action.act(() =>
      run('campaigns.updateSchedule', { campaignId, ...(draft.timeZone !== schedule.timeZone ? { timeZone: draft.timeZone } : {}), ...(Object.keys(days).length > 0 ? { days } : {}) }),
    );
    if (r) {
      setDraft(r.after);
      toast(r.running ? 'Schedule saved; the new windows apply from the next send.' : 'Schedule saved.');
    }
  }

  return (
    <section className="card-box schedule" aria-label="Sending schedule" data-testid="schedule-editor">
      <p className="muted">
        Messages go out only inside these windows, in the schedule's time zone{running ? '; changes apply from the next send while the campaign runs' : ''}. Times are 24-hour (HH:MM); an end of 24:00 sends until midnight.
      </p>
      <label className="field" style={{ maxWidth: 360 }}>
        <span>Time zone {draft.timeZone === schedule.timeZone ? `(${utcOffset(schedule.utcOffsetMinutes)} now)` : ''}</span>
        <input className={`input${unknownZone ? ' invalid' : ''}`} list="time-zones" value={draft.timeZone} onChange={(e) => setDraft({ ...draft, timeZone: e.target.value })} aria-label="Time zone" />
        <datalist id="time-zones">
          {allZones.map((z) => (
            <option key={z} value={z} />
          ))}
        </datalist>
      </label>
      {unknownZone && <ErrorText error={`“${draft.timeZone}” is not a time zone this computer knows; use a name such as Europe/Berlin or America/New_York.`} />}
      <table className="plain schedule-days">
        <thead>
          <tr>
            <th>Day</th>
            <th>Sends</th>
            <th>From</th>
            <th>Until</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {DAYS.map((d) => {
            const w = draft.days[d];
            const problem = windowProblem(w);
            return (
              <tr key={d} data-day={d} className={problem ? 'invalid-row' : ''}>
                <td>{DAY_LABELS[d]}</td>
                <td>
                  <input type="checkbox" className="check" checked={w.enabled} onChange={(e) => setDay(d, { enabled: e.target.checked })} aria-label={`${DAY_LABELS[d]} enabled`} />
                </td>
                <td>
                  <input className="input time-input" type="text" inputMode="numeric" placeholder="HH:MM" maxLength={5} size={6} title="24-hour time, HH:MM" value={w.start} disabled={!w.enabled} onChange={(e) => setDay(d, { start: e.target.value.trim() })} aria-label={`${DAY_LABELS[d]} start`} />
                </td>
                <td>
                  <input className="input time-input" type="text" inputMode="numeric" placeholder="HH:MM" maxLength={5} size={6} title="24-hour time, HH:MM; 24:00 is midnight at the end of the day" value={w.end} disabled={!w.enabled} onChange={(e) => setDay(d, { end: e.target.value.trim() })} aria-label={`${DAY_LABELS[d]} end`} />
                </td>
                <td>{problem && <span className="error-inline" role="alert">{problem}</span>}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {noDay && <ErrorText error="No day is on: a schedule keeps at least one day with a window." />}
      <div className="row">
        <button className="btn primary" disabled={!changed || action.busy} onClick={() => void save()}>{action.busy ? 'Saving…' : 'Save schedule'}</button>
        <button className="btn" disabled={!changed || action.busy} onClick={() => { setDraft(schedule); action.clear(); }}>Undo changes</button>
      </div>
      <div data-testid="schedule-error"><ErrorText error={action.error} /></div>
    </section>
  );
}
