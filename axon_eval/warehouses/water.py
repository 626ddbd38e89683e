"""The water set's warehouse: a municipal water utility's rows, built in memory from a seed.

*Tamarack Bay Water*: districts, accounts, meters, readings, bills, pipes, work orders, pumping stations
and their days, quality samples, suppliers and chemical deliveries, 2023-01-01 to 2025-06-30. The set's cases
(questions, SQL with the rows it returned, answers, constructed labels) are the data file
``axon_eval/fixtures/sets/water.jsonl``; the shared builder
:mod:`axon_eval.fixtures.labelled` writes them under ``data/turns``.
The tests re-run every stored statement against :func:`build_water_warehouse`.
"""

from __future__ import annotations

import math
import random
import sqlite3
from datetime import date, datetime, timedelta, timezone


#: Seed of the warehouse's rows.
WATER_SEED = 20261203
#: Seed of timings and of the turn assignment.
WATER_TURN_SEED = 20261204
FIRST_DAY = date(2023, 1, 1)
LAST_DAY = date(2025, 6, 30)
FIRST_CAPTURE = datetime(2026, 12, 4, 8, 0, 0, tzinfo=timezone.utc)
BUSINESS_NAME = "Tamarack Bay Water"
TURNS_FILE = "water_turns.jsonl"
LABELS_FILE = "water_labels.csv"

SCHEMA = """
CREATE TABLE districts (
    district_id   INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    area_km2      REAL NOT NULL
);
CREATE TABLE accounts (
    account_id      INTEGER PRIMARY KEY,
    account_no      TEXT NOT NULL UNIQUE,
    uprn            TEXT NOT NULL,
    district_id     INTEGER NOT NULL REFERENCES districts(district_id),
    category        TEXT NOT NULL CHECK (category IN ('residential', 'commercial', 'industrial')),
    parent_company  TEXT,
    parent_country  TEXT,
    status          TEXT NOT NULL CHECK (status IN ('active', 'suspended', 'closed')),
    opened_date     TEXT NOT NULL,
    closed_date     TEXT
);
CREATE TABLE meters (
    meter_id              INTEGER PRIMARY KEY,
    serial_no             TEXT NOT NULL UNIQUE,
    account_id            INTEGER NOT NULL REFERENCES accounts(account_id),
    manufacturer          TEXT NOT NULL,
    manufacturer_country  TEXT NOT NULL,
    diameter_mm           INTEGER NOT NULL,
    installed_date        TEXT NOT NULL
);
CREATE TABLE readings (
    reading_id     INTEGER PRIMARY KEY,
    meter_id       INTEGER NOT NULL REFERENCES meters(meter_id),
    reading_date   TEXT NOT NULL,
    volume_litres  INTEGER NOT NULL,
    read_type      TEXT NOT NULL CHECK (read_type IN ('actual', 'estimated', 'customer'))
);
CREATE TABLE bills (
    bill_id        INTEGER PRIMARY KEY,
    account_id     INTEGER NOT NULL REFERENCES accounts(account_id),
    period_start   TEXT NOT NULL,
    period_end     TEXT NOT NULL,
    issued_date    TEXT NOT NULL,
    amount_cents   INTEGER NOT NULL,
    currency       TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('open', 'paid', 'overdue', 'disputed', 'written_off')),
    paid_date      TEXT
);
CREATE TABLE pipes (
    pipe_id       INTEGER PRIMARY KEY,
    district_id   INTEGER NOT NULL REFERENCES districts(district_id),
    material      TEXT NOT NULL,
    diameter_mm   INTEGER NOT NULL,
    length_m      REAL NOT NULL,
    install_year  INTEGER NOT NULL
);
CREATE TABLE work_orders (
    work_order_id  INTEGER PRIMARY KEY,
    pipe_id        INTEGER NOT NULL REFERENCES pipes(pipe_id),
    kind           TEXT NOT NULL CHECK (kind IN ('leak', 'burst', 'valve', 'hydrant')),
    priority       INTEGER NOT NULL,
    opened_date    TEXT NOT NULL,
    closed_date    TEXT,
    loss_m3        REAL,
    cost_cents     INTEGER NOT NULL
);
CREATE TABLE pumping_stations (
    station_id            INTEGER PRIMARY KEY,
    name                  TEXT NOT NULL UNIQUE,
    district_id           INTEGER NOT NULL REFERENCES districts(district_id),
    pump_maker            TEXT NOT NULL,
    pump_country          TEXT NOT NULL,
    pump_count            INTEGER NOT NULL,
    capacity_m3_per_day   INTEGER NOT NULL
);
CREATE TABLE station_days (
    station_id   INTEGER NOT NULL REFERENCES pumping_stations(station_id),
    day          TEXT NOT NULL,
    energy_kwh   REAL NOT NULL,
    pumped_m3    REAL NOT NULL,
    PRIMARY KEY (station_id, day)
);
CREATE TABLE quality_samples (
    sample_id      INTEGER PRIMARY KEY,
    district_id    INTEGER NOT NULL REFERENCES districts(district_id),
    sample_date    TEXT NOT NULL,
    parameter      TEXT NOT NULL,
    mg_per_l       REAL NOT NULL
);
CREATE TABLE suppliers (
    supplier_id  INTEGER PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    country      TEXT NOT NULL,
    currency     TEXT NOT NULL
);
CREATE TABLE chemical_deliveries (
    delivery_id     INTEGER PRIMARY KEY,
    supplier_id     INTEGER NOT NULL REFERENCES suppliers(supplier_id),
    station_id      INTEGER NOT NULL REFERENCES pumping_stations(station_id),
    chemical        TEXT NOT NULL,
    delivered_date  TEXT NOT NULL,
    quantity_kg     INTEGER NOT NULL,
    cost_cents      INTEGER NOT NULL,
    currency        TEXT NOT NULL
);
"""
TABLES = ("districts", "accounts", "meters", "readings", "bills", "pipes", "work_orders", "pumping_stations",
          "station_days", "quality_samples", "suppliers", "chemical_deliveries")

#: name, area in km², weight of accounts, weight of pipes
DISTRICTS = [("Riverside District", 14.2, 9, 8), ("Hollowmere District", 9.8, 6, 7),
             ("Old Quarry District", 11.5, 4, 6), ("Northbank District", 17.9, 8, 9),
             ("Saltmarsh District", 7.4, 3, 4), ("Elmstead District", 12.6, 7, 6),
             ("Cobble Hill District", 5.1, 5, 3), ("Larchfield District", 21.3, 2, 5)]
#: maker, country, weight
METER_MAKERS = [("Aquametrix", "Germany", 5), ("Danflow", "Denmark", 4), ("Contatori Adriatici", "Italy", 3),
                ("Sveda Mätteknik", "Sweden", 2), ("Prairie Flow Instruments", "Canada", 6),
                ("Keystone Meter Co.", "United States", 3)]
#: parent company, country (commercial and industrial accounts only)
PARENTS = [("Brauhaus Nord AG", "Germany"), ("Lindqvist Foods AB", "Sweden"), ("Maison Verrier SA", "France"),
           ("Harbour Logistics Inc.", "United States"), ("Redwood Hotels LLC", "United States"),
           ("Kobe Precision K.K.", "Japan"), ("Tamarack Holdings Ltd.", "Canada"), ("Vestby Dairy A/S", "Denmark")]
#: material, first and last install year, weight
MATERIALS = [("cast_iron", 1905, 1962, 5), ("asbestos_cement", 1950, 1979, 3), ("ductile_iron", 1968, 2012, 6),
             ("pvc", 1975, 2024, 7), ("hdpe", 1996, 2024, 4)]
#: name, district (1-based), pump maker, country, pumps, capacity m³/day, days offline in 1000
STATIONS = [("Quarry Road Pumping Station", 3, "Rheinpumpen", "Germany", 4, 42000, 8),
            ("North Reservoir Booster", 4, "Hvidbro Pumper", "Denmark", 3, 26000, 30),
            ("Riverside Intake", 1, "Rheinpumpen", "Germany", 6, 68000, 4),
            ("Saltmarsh Lift Station", 5, "Idraulica Po", "Italy", 2, 9000, 120),
            ("Elmstead Booster", 6, "Hvidbro Pumper", "Denmark", 2, 14000, 60),
            ("Larchfield Tower Pumps", 8, "Norrström Pump", "Sweden", 3, 18000, 210),
            ("Cobble Hill Booster", 7, "Idraulica Po", "Italy", 2, 7000, 15)]
#: name, country, currency
SUPPLIERS = [("Nordklar A/S", "Denmark", "DKK"), ("Chemie Weser GmbH", "Germany", "EUR"),
             ("Svensk Vattenkemi AB", "Sweden", "SEK"), ("Laurentian Chemicals", "Canada", "CAD"),
             ("Acque Pure S.p.A.", "Italy", "EUR"), ("Great Lakes Treatment Supply", "United States", "USD")]
#: chemical, kg per delivery range, price per kg in CAD cents
CHEMICALS = [("sodium hypochlorite", (800, 4000), 62), ("ferric chloride", (1500, 9000), 41),
             ("fluorosilicic acid", (300, 1200), 118), ("hydrated lime", (2000, 12000), 23)]
#: how many units of each currency one CAD buys (for supplier prices)
FX = {"CAD": 1.0, "DKK": 5.0, "EUR": 0.68, "SEK": 7.7, "USD": 0.74}
#: parameter: typical mg/L, spread
PARAMETERS = {"free_chlorine": (0.9, 0.35), "lead": (0.0024, 0.0018), "nitrate": (2.1, 0.9),
              "fluoride": (0.62, 0.12)}
#: free-chlorine residual of each district relative to the typical one (the far, less sampled ends run higher)
CHLORINE_SHIFT = [0.85, 1.0, 1.15, 0.92, 1.2, 1.0, 1.1, 1.35]
WORK_KINDS = ["leak", "burst", "valve", "hydrant"]
WORK_WEIGHT = [9, 3, 3, 2]


def _day(rng: random.Random, first: date = FIRST_DAY, last: date = LAST_DAY) -> date:
    return first + timedelta(days=rng.randint(0, (last - first).days))


def _months() -> list[date]:
    out, d = [], FIRST_DAY
    while d <= LAST_DAY:
        out.append(d)
        d = date(d.year + d.month // 12, d.month % 12 + 1, 1)
    return out


def build_water_warehouse(seed: int = WATER_SEED) -> sqlite3.Connection:
    """The warehouse in an in-memory SQLite connection, every row from ``random.Random(seed)``."""
    rng = random.Random(seed)
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO districts VALUES (?, ?, ?)",
                     [(i, d[0], d[1]) for i, d in enumerate(DISTRICTS, start=1)])
    district_ids = list(range(1, len(DISTRICTS) + 1))

    # accounts, meters
    accounts, meters = [], []
    for aid in range(1, 1601):
        did = rng.choices(district_ids, [d[2] for d in DISTRICTS])[0]
        category = rng.choices(["residential", "commercial", "industrial"], [84, 13, 3])[0]
        parent, pcountry = (None, None)
        if category != "residential" and rng.random() < 0.55:
            parent, pcountry = rng.choice(PARENTS)
        opened = _day(rng, date(1994, 1, 1), date(2025, 5, 31))
        u = rng.random()
        status, closed = "active", None
        if u < 0.09 and opened < date(2024, 12, 1):
            status, closed = "closed", _day(rng, max(opened + timedelta(days=60), FIRST_DAY), LAST_DAY)
        elif u < 0.14:
            status = "suspended"
        uprn = f"{rng.randint(10, 99)}{aid * 7919 % 1000003:07d}"
        accounts.append((aid, f"TBW-{100000 + aid * 37}", uprn, did, category, parent, pcountry, status,
                         opened.isoformat(), None if closed is None else closed.isoformat()))
        k = 1 if category == "residential" else rng.randint(1, 4) if category == "commercial" else rng.randint(2, 6)
        for _ in range(k):
            mid = len(meters) + 1
            maker, mcountry, _ = rng.choices(METER_MAKERS, [m[2] for m in METER_MAKERS])[0]
            dia = rng.choice([15, 15, 20, 25]) if category == "residential" else rng.choice([25, 40, 50, 80])
            installed = max(opened, date(2001, 1, 1)) + timedelta(days=rng.randint(0, 6000))
            installed = min(installed, date(2025, 6, 1))
            meters.append((mid, f"{maker[:2].upper()}{rng.randint(100000, 999999)}-{mid:05d}", aid, maker, mcountry,
                           dia, installed.isoformat()))
    conn.executemany("INSERT INTO accounts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", accounts)
    conn.executemany("INSERT INTO meters VALUES (?, ?, ?, ?, ?, ?, ?)", meters)
    acc = {a[0]: a for a in accounts}

    # monthly readings (the reading of a month's use is taken on the first days of the next month)
    readings = []
    months = _months()
    for m in meters:
        a = acc[m[2]]
        base = {"residential": 13500, "commercial": 95000, "industrial": 410000}[a[4]] * rng.uniform(0.5, 1.6)
        start = max(date.fromisoformat(m[6]), date.fromisoformat(a[8]))
        end = date.fromisoformat(a[9]) if a[9] else LAST_DAY
        for mo in months:
            read_on = mo + timedelta(days=rng.randint(0, 6))
            if read_on < start or read_on > end:
                continue
            season = 1.0 + 0.35 * (mo.month in (6, 7, 8)) - 0.1 * (mo.month in (12, 1, 2))
            rt = rng.choices(["actual", "estimated", "customer"], [80, 14, 6])[0]
            readings.append((len(readings) + 1, m[0], read_on.isoformat(),
                             int(base * season * rng.uniform(0.7, 1.3)), rt))
    conn.executemany("INSERT INTO readings VALUES (?, ?, ?, ?, ?)", readings)

    # quarterly bills, issued after each quarter; the quarter ending in June 2025 is not billed yet
    bills = []
    quarters = [date(y, mth, 1) for y in (2023, 2024, 2025) for mth in (1, 4, 7, 10) if date(y, mth, 1) <= date(2025, 1, 1)]
    for a in accounts:
        opened = date.fromisoformat(a[8])
        closed = date.fromisoformat(a[9]) if a[9] else None
        scale = {"residential": 1.0, "commercial": 6.5, "industrial": 27.0}[a[4]]
        for qs in quarters:
            qe = date(qs.year + (qs.month + 2) // 12, (qs.month + 2) % 12 + 1, 1) - timedelta(days=1)
            if opened > qe or (closed is not None and closed < qs):
                continue
            issued = qe + timedelta(days=rng.randint(4, 18))
            amount = int(scale * (5200 - 6500 * math.log(1.0 - rng.random())))  # a fixed charge plus an exponential volume charge
            due = issued + timedelta(days=90)  # 90-day payment terms
            u = rng.random()
            if due > LAST_DAY:
                status, paid = ("paid", issued + timedelta(days=rng.randint(3, 70))) if u < 0.7 else ("open", None)
                if paid is not None and paid > LAST_DAY:
                    status, paid = "open", None
            elif u < 0.86:
                status, paid = "paid", issued + timedelta(days=rng.randint(3, 55))
            elif u < 0.93:
                status, paid = "overdue", None
            elif u < 0.97:
                status, paid = "disputed", None
            else:
                status, paid = "written_off", None
            if a[7] == "suspended" and qs >= date(2024, 7, 1) and status == "paid":
                status, paid = "overdue", None
            bills.append((len(bills) + 1, a[0], qs.isoformat(), qe.isoformat(), issued.isoformat(), amount, "CAD",
                          status, None if paid is None else paid.isoformat()))
    conn.executemany("INSERT INTO bills VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", bills)

    # mains and their work orders
    pipes = []
    for pid in range(1, 2201):
        did = rng.choices(district_ids, [d[3] for d in DISTRICTS])[0]
        material, first, last, _ = rng.choices(MATERIALS, [m[3] for m in MATERIALS])[0]
        if did == 3 and material == "pvc" and rng.random() < 0.5:
            material, first, last = "cast_iron", 1905, 1962
        pipes.append((pid, did, material, rng.choice([100, 150, 150, 200, 250, 300, 450]),
                      round(rng.uniform(25, 640), 1), rng.randint(first, last)))
    conn.executemany("INSERT INTO pipes VALUES (?, ?, ?, ?, ?, ?)", pipes)
    risk = {p[0]: (3.0 if p[2] == "cast_iron" else 2.2 if p[2] == "asbestos_cement" else 1.0) for p in pipes}
    work = []
    pipe_ids = [p[0] for p in pipes]
    for wid in range(1, 3101):
        pid = rng.choices(pipe_ids, [risk[i] for i in pipe_ids])[0]
        kind = rng.choices(WORK_KINDS, WORK_WEIGHT)[0]
        opened = _day(rng)
        took = int(rng.expovariate(1 / (4 if kind == "burst" else 18))) + 1
        closed = opened + timedelta(days=took)
        if closed > LAST_DAY or rng.random() < 0.04:
            closed = None
        loss = round(rng.uniform(40, 2500), 1) if kind == "burst" else round(rng.uniform(2, 300), 1) \
            if kind == "leak" else None
        cost = int(rng.uniform(180000, 2400000) if kind == "burst" else rng.uniform(25000, 480000))
        work.append((wid, pid, kind, 1 if kind == "burst" else rng.choice([1, 2, 2, 3]), opened.isoformat(),
                     None if closed is None else closed.isoformat(), loss, cost))
    conn.executemany("INSERT INTO work_orders VALUES (?, ?, ?, ?, ?, ?, ?, ?)", work)

    # pumping stations and their daily log (some days offline: no row)
    conn.executemany("INSERT INTO pumping_stations VALUES (?, ?, ?, ?, ?, ?, ?)",
                     [(i, s[0], s[1], s[2], s[3], s[4], s[5]) for i, s in enumerate(STATIONS, start=1)])
    days = []
    n_days = (LAST_DAY - FIRST_DAY).days + 1
    for sid, st in enumerate(STATIONS, start=1):
        kwh_per_m3 = rng.uniform(0.18, 0.62)
        for k in range(n_days):
            d = FIRST_DAY + timedelta(days=k)
            if rng.random() < st[6] / 1000:
                continue
            season = 1.0 + 0.3 * (d.month in (6, 7, 8))
            m3 = round(st[5] * rng.uniform(0.35, 0.8) * season * (0.4 if rng.random() < 0.05 else 1.0), 1)
            days.append((sid, d.isoformat(), round(m3 * kwh_per_m3 * rng.uniform(0.8, 1.25) + 150 * (m3 < 0.3 * st[5]), 1),
                         m3))
    conn.executemany("INSERT INTO station_days VALUES (?, ?, ?, ?)", days)

    # water-quality samples: bigger districts are sampled more often
    samples = []
    for k in range(1, 5201):
        did = rng.choices(district_ids, [d[2] + 1 for d in DISTRICTS])[0]
        param = rng.choice(list(PARAMETERS))
        mu, sd = PARAMETERS[param]
        shift = CHLORINE_SHIFT[did - 1] if param == "free_chlorine" else 1.0
        v = max(mu * 0.05, rng.gauss(mu * shift, sd))
        if param == "lead" and did == 3 and rng.random() < 0.25:
            v *= 3.0
        samples.append((k, did, _day(rng).isoformat(), param, round(v, 4 if param == "lead" else 2)))
    conn.executemany("INSERT INTO quality_samples VALUES (?, ?, ?, ?, ?)", samples)

    # treatment chemicals
    conn.executemany("INSERT INTO suppliers VALUES (?, ?, ?, ?)",
                     [(i, *s) for i, s in enumerate(SUPPLIERS, start=1)])
    deliveries = []
    for k in range(1, 1401):
        sup = rng.choices(range(1, len(SUPPLIERS) + 1), [5, 4, 2, 6, 3, 3])[0]
        chem, (lo, hi), price = rng.choice(CHEMICALS)
        qty = rng.randint(lo, hi)
        cur = SUPPLIERS[sup - 1][2]
        cost = int(qty * price * FX[cur] * rng.uniform(0.9, 1.15))
        deliveries.append((k, sup, rng.choices(range(1, len(STATIONS) + 1), [5, 3, 7, 1, 2, 2, 1])[0], chem,
                           _day(rng).isoformat(), qty, cost, cur))
    conn.executemany("INSERT INTO chemical_deliveries VALUES (?, ?, ?, ?, ?, ?, ?, ?)", deliveries)
    conn.commit()
    return conn

