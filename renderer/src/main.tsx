/** The page's entry (loaded by boot.ts, after the first screen the page's HTML brought is painted):
 * small on purpose. It opens the bridge and asks for the first screen's data
 * (the session, and the leads table's first page when the window opens on it), adopts the leads
 * table's first rows the page's HTML brought (the web host draws them into it) or draws them in
 * plain DOM as soon as they answer (first-rows.ts), then runs React and the app, a chunk of their
 * own loaded meanwhile; React's table then takes the first rows' place. */
import { bridge } from './bridge/index.ts';
import { dropFirstRows, paintFirstRowsWhenReady } from './screens/leads/first-rows.ts';
import { startLeadPager } from './screens/leads/lead-pager.ts';
import { searchInput } from './screens/leads/selection.ts';
import { useApp } from './state/app-store.ts';

// The session first: its answer is immediate, and the app's frame can be drawn while the backend
// runs the page's query. An unanswered session is asked again by the app (App.tsx).
const session = bridge.session.get();
session.catch(() => undefined);
const { screen, filters } = useApp.getState();
// The app's chunk is fetched and compiled meanwhile (modulepreload links in the page), and run once
// the first rows are painted: running it (React, react-dom and the leads screen, a long task) would
// otherwise hold back the drawing of the first page when it answers during it.
// The first rows the page's HTML may bring (the web host's) are adopted by paintFirstRowsWhenReady,
// or go when the window opens on another screen.
if (screen !== 'leads') dropFirstRows();
const firstRows = screen === 'leads' ? paintFirstRowsWhenReady(startLeadPager(searchInput(filters)), session) : Promise.resolve();
void firstRows.then(() => import('./app/mount.tsx')).then((app) => app.mount(session));
