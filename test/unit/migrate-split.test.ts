/** Migrations are split into statements on semicolons that end a line; a `$$`-quoted function body
 * stays one statement, comments inside it included. */
import { describe, expect, it } from 'vitest';
import { loadMigrations, splitStatements } from '../../sync-server/migrate.ts';

describe('splitStatements', () => {
  it('splits on line-ending semicolons and drops comment lines', () => {
    expect(splitStatements('-- a comment\nCREATE TABLE a (x int);\n\nCREATE INDEX b\n  ON a (x);\n')).toEqual(['CREATE TABLE a (x int)', 'CREATE INDEX b\n  ON a (x)']);
  });

  it('keeps a dollar-quoted body whole, with its semicolons and comments', () => {
    const sql = ['CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$', 'BEGIN', '  -- inside', '  RETURN 1;', 'END;', '$$;', 'SELECT f();'].join('\n');
    expect(splitStatements(sql)).toEqual(['CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$\nBEGIN\n  -- inside\n  RETURN 1;\nEND;\n$$', 'SELECT f()']);
  });

  it('splits the shipped collection-versions function as one statement', () => {
    const m = loadMigrations().find((x) => x.name === '012_collection_versions.sql');
    expect(m).toBeDefined();
    const stmts = splitStatements(m?.sql ?? '');
    expect(stmts).toHaveLength(1);
    expect(stmts[0]).toMatch(/^CREATE FUNCTION crm_collection_versions[\s\S]*\$\$$/);
  });
});
