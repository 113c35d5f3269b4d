/**
 * Notifications in a plain browser tab (the web host): the browser's Notification API, which asks
 * the member for permission the first time and respects a refusal. The desktop app shows them from
 * its main process instead (electron/main.ts).
 */
import type { Notice } from '../../../electron/bridge.ts';

export async function browserNotify(notice: Notice, clicked: () => void): Promise<boolean> {
  if (typeof Notification === 'undefined' || Notification.permission === 'denied') return false;
  if (Notification.permission !== 'granted' && (await Notification.requestPermission()) !== 'granted') return false;
  const n = new Notification(notice.title, { body: notice.body, tag: notice.tag });
  n.onclick = () => {
    window.focus();
    clicked();
  };
  return true;
}
