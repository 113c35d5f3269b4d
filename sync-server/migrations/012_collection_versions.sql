-- The versions of a workspace's cached collections (sync-server/doc-cache.ts): the highest seq of
-- each, read at the start of every API call on PostgreSQL to decide whether the per-process copies
-- are current. As seven literal subqueries in one statement it was planned on every call, and with
-- the documents table's many expression and partial indexes planning cost ~1.5 ms, about twenty
-- times the execution (measured 2026-11-24: 1,255 calls/s at 10 clients). PL/pgSQL keeps the plan
-- of its statement per session, so the call itself costs only its index probes.
CREATE FUNCTION crm_collection_versions(ws text, cols text[])
  RETURNS TABLE (collection text, version bigint)
  LANGUAGE plpgsql STABLE
AS $$
DECLARE
  c text;
BEGIN
  FOREACH c IN ARRAY cols LOOP
    collection := c;
    SELECT COALESCE(max(d.seq), 0) INTO version FROM documents d WHERE d.collection = c AND d.workspace_id = ws;
    RETURN NEXT;
  END LOOP;
END;
$$;
