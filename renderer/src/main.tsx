/** The page's entry: small on purpose. It opens the bridge and asks for the first screen's data
 * (the session, and the leads table's first page when the window opens on it), draws the leads
 * table's first rows in plain DOM as soon as they answer (first-rows.ts), and loads React and the
 * app, a chunk of their own, meanwhile; React's table then takes the first rows' place. */
import { bridge } from './bridge/index.ts';
import { paintFirstRowsWhenReady } from './screens/leads/first-rows.ts';
import { startLeadPager } from './screens/leads/lead-pager.ts';
import { searchInput } from './screens/leads/selection.ts';
import { useApp } from './state/app-store.ts';
import './styles/app.css';

// The session first: its answer is immediate, and the app's frame can be drawn while the backend
// runs the page's query. An unanswered session is asked again by the app (App.tsx).
const session = bridge.session.get();
session.catch(() => undefined);
const { screen, filters } = useApp.getState();
if (screen === 'leads') paintFirstRowsWhenReady(startLeadPager(searchInput(filters)), session);
void import('./app/mount.tsx').then((app) => app.mount(session));
