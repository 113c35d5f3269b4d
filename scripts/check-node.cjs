/* The Node version check that `npm start`, `npm test` and `npm run sync-server` run first.
 *
 * On an older Node the app does not fail politely: better-sqlite3 13 ends the process with a
 * segmentation fault on Node 20 at the first use of the local database. So this stops before
 * anything else runs and says, in one sentence, which versions are supported and how to get one.
 * The supported range is read from package.json "engines", the one place it is written.
 *
 * Plain ES5 and CommonJS on purpose: it must parse and run on any Node old enough to need it (no
 * const, arrow functions, template strings or optional chaining).
 *
 *   node scripts/check-node.cjs                      exit 0 silently, or 1 with the sentence
 *   node scripts/check-node.cjs --as-version 20.1.0  judge that version instead (tests)
 */
/* global require, process, __dirname */
/* eslint-disable @typescript-eslint/no-require-imports -- CommonJS is the point: see above */
'use strict';

var fs = require('fs');
var path = require('path');

/** "^22.19.0 || >=24" -> [{ op: '^', v: [22, 19, 0] }, { op: '>=', v: [24, 0, 0] }]. Only the two
 * forms package.json uses are understood; anything else is an error, so a new engines value that
 * this check would misjudge is noticed (the test runs this file) rather than passed silently. */
function parseRange(range) {
  return range.split('||').map(function (part) {
    var m = /^\s*(\^|>=)\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?\s*$/.exec(part);
    if (!m) {
      throw new Error('scripts/check-node.cjs cannot read engines.node "' + range + '": it understands ^X.Y.Z and >=X.Y.Z joined by ||');
    }
    return { op: m[1], v: [Number(m[2]), Number(m[3] || 0), Number(m[4] || 0)] };
  });
}

function parseVersion(text) {
  var m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(text);
  if (!m) throw new Error('scripts/check-node.cjs: "' + text + '" is not a Node version');
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

function compare(a, b) {
  for (var i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

function satisfies(version, parts) {
  return parts.some(function (p) {
    if (p.op === '>=') return compare(version, p.v) >= 0;
    return version[0] === p.v[0] && compare(version, p.v) >= 0;
  });
}

/** [{ '^', 22.19.0 }, { '>=', 24 }] -> "22.19 or a later 22.x, or 24 or newer". */
function describe(parts) {
  return parts.map(function (p) {
    var short = p.v[2] === 0 ? (p.v[1] === 0 ? String(p.v[0]) : p.v[0] + '.' + p.v[1]) : p.v.join('.');
    if (p.op === '>=') return short + ' or newer';
    return p.v[1] === 0 && p.v[2] === 0 ? p.v[0] + '.x' : short + ' or a later ' + p.v[0] + '.x';
  }).join(', or ');
}

function main(argv) {
  var pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));
  var range = pkg.engines && pkg.engines.node;
  if (typeof range !== 'string') throw new Error('scripts/check-node.cjs: package.json has no engines.node');
  var parts = parseRange(range);
  var i = argv.indexOf('--as-version');
  var versionText = i >= 0 ? argv[i + 1] : process.versions.node;
  if (versionText === undefined) throw new Error('scripts/check-node.cjs: --as-version needs a version');
  if (satisfies(parseVersion(versionText), parts)) return 0;
  process.stderr.write(
    'Outreach CRM needs Node.js ' + describe(parts) + ' (24 LTS recommended; package.json engines: "' + range + '"), ' +
    'but this is Node.js ' + versionText.replace(/^v/, '') + ' (' + process.execPath + '): install Node.js 24 LTS from ' +
    'https://nodejs.org/ or with a version manager (nvm install 24), or on Linux put the npm registry\'s ' +
    'Node 24 first on PATH with `source .ci/node-lts.sh`, then run `npm install` and this command again.\n'
  );
  return 1;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (e) {
  process.stderr.write((e && e.message ? e.message : String(e)) + '\n');
  process.exitCode = 2;
}
