-- The warehouse's inventory ledger (inventory.db is built from this file:
--   python3 -c "import sqlite3; sqlite3.connect('inventory.db').executescript(open('inventory.sql').read())").
-- Stock on hand is the sum of a SKU's movements; the next delivery is its earliest open order.
CREATE TABLE movements (
  id INTEGER PRIMARY KEY,
  sku TEXT NOT NULL,
  qty INTEGER NOT NULL,            -- receipts positive, issues negative
  kind TEXT NOT NULL CHECK (kind IN ('receipt', 'issue', 'adjustment')),
  posted_at TEXT NOT NULL
);
CREATE TABLE deliveries (
  id INTEGER PRIMARY KEY,
  sku TEXT NOT NULL,
  qty INTEGER NOT NULL,
  due TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('open', 'received', 'cancelled'))
);
INSERT INTO movements (sku, qty, kind, posted_at) VALUES
  ('IC-MC-44', 500, 'receipt', '2026-06-02'),
  ('IC-MC-44', -180, 'issue', '2026-06-20'),
  ('IC-MC-44', -150, 'issue', '2026-07-10'),
  ('IC-MC-44', -50, 'issue', '2026-07-24'),
  ('IC-MC-44', 0, 'adjustment', '2026-07-25'),
  ('CAP-10UF', 2000, 'receipt', '2026-05-15'),
  ('CAP-10UF', -600, 'issue', '2026-07-01');
INSERT INTO deliveries (sku, qty, due, status) VALUES
  ('IC-MC-44', 500, '2026-06-02', 'received'),
  ('IC-MC-44', 300, '2026-07-28', 'cancelled'),
  ('IC-MC-44', 200, '2026-08-04', 'open'),
  ('IC-MC-44', 400, '2026-09-01', 'open'),
  ('CAP-10UF', 1000, '2026-08-15', 'open');
