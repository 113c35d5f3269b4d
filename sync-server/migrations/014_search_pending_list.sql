-- Lead search while leads are being written: every lead update inserts its trigram, stage and tag
-- keys into leads_search_scoped, and with GIN's fast update they first go to the index's pending
-- list, which each search reads in full and which only autovacuum or a 4 MB overflow flushes
-- (gin_pending_list_limit's default). Measured at 100k leads after 8 s of updateTag at 10
-- connections: search query=Smith + stage fell from 408-449 to 329-334 req/s (p50 21-23 -> 29 ms).
-- With a 256 kB list the updating backends flush it 16 times as often: search after the same writes
-- 418-422 req/s (p50 23 ms), updateTag unchanged (608-708 vs 622-647 req/s); with fast update off,
-- updateTag fell to 395-444 req/s. Value in kB.
ALTER INDEX leads_search_scoped SET (gin_pending_list_limit = 256);
