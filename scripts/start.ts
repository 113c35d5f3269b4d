/** `npm start`: runs the product with embedded defaults. Until the desktop app and the sync server
 * land, it says so plainly. */
console.log('The domain engine (shared/) is in place and tested with `npm test`; the sync server and the desktop app are being built.');
