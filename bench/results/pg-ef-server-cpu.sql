\set QUIET on
select pg_backend_pid() as pid \gset
\setenv PGPID :pid
set search_path = h30e_100000, public;
create temp table qv as select embedding::halfvec(256) as q from index_docs where embedding is not null order by id limit 200 offset 1000;
set hnsw.iterative_scan = strict_order; set enable_sort = off;
create or replace function pg_temp.loop(ef int) returns void language plpgsql as $$
declare r record; begin
  perform set_config('hnsw.ef_search', ef::text, false);
  for r in select q from qv loop
    perform count(*) from (select id from index_docs where namespace = 'scale-0' and not removed and embedding is not null order by embedding::halfvec(256) <=> r.q limit 100) s;
  end loop; end $$;
select pg_temp.loop(100);
