/** Type checks that tie the Electron double to Electron's own declarations (node_modules/electron). */

/**
 * The double's function accepts everything Electron's accepts (checked strictly: a parameter Electron
 * takes and the double does not fails the typecheck). Results are left free, because where Electron
 * returns one of its objects (a Menu, `this`) the double returns its own. For an overloaded method
 * TypeScript checks the last overload only.
 */
export type SameParams<T, K extends keyof T> = { [P in K]: T[P] extends (...args: infer A) => unknown ? (...args: A) => unknown : never };
