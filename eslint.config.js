// Lint runs in `npm test`. House habits from STYLE.md: type over interface, no enum, no `any` leaks.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'data/**', 'build/output/**', 'build/electron/**', 'test-results/**', 'renderer/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { ecmaVersion: 2023, sourceType: 'module' },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-definitions': ['error', 'type'],
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-syntax': ['error', { selector: 'TSEnumDeclaration', message: 'Use a string union, not enum.' }],
    },
  },
  {
    files: ['shared/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['node:*', 'fs', 'path', 'crypto', 'electron', 'react', 'pg', 'better-sqlite3'], message: 'shared/ is isomorphic: no Node, DOM or Electron imports.' },
      ] }],
      // Handlers are pure over (input, ctx): time and randomness come from ctx (ctx.clock, ctx.random),
      // so simulations and tests are deterministic. `new Date(iso)` with an argument is fine.
      'no-restricted-properties': ['error',
        { object: 'Date', property: 'now', message: 'shared/ reads time from ctx.clock (or a `now` it is given), not Date.now().' },
        { object: 'Math', property: 'random', message: 'shared/ takes randomness from ctx.random (or shared/seeded-random.ts), not Math.random().' },
        { object: 'performance', property: 'now', message: 'shared/ reads time from ctx.clock, not performance.now().' },
      ],
      // Repeats the rule of every file (a later setting of a rule replaces the earlier one here).
      'no-restricted-syntax': ['error',
        { selector: 'TSEnumDeclaration', message: 'Use a string union, not enum.' },
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'shared/ reads time from ctx.clock (or a `now` it is given), not new Date().' },
        { selector: "CallExpression[callee.name='Date']", message: 'Date() is the current time as text: shared/ reads time from ctx.clock.' },
      ],
    },
  },
);
