"""The transit set's warehouse: a regional bus and tram operator's rows, built in memory from a seed.

*Three Shores Transit*: depots, routes, stops, vehicles, trips, fare taps, incidents, staff and shifts,
2023-01-01 to 2025-06-30. The set's cases
(questions, SQL with the rows it returned, answers, constructed labels) are the data file
``axon_eval/fixtures/sets/transit.jsonl``; the shared builder
:mod:`axon_eval.fixtures.labelled` writes them under ``data/turns``.
The tests re-run every stored statement against :func:`build_transit_warehouse`.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import date, datetime, timedelta, timezone
from typing import Any


#: Seed of the warehouse's rows.
TRANSIT_SEED = 20261201
#: Seed of timings and of the turn assignment.
TRANSIT_TURN_SEED = 20261202
FIRST_DAY = date(2023, 1, 1)
LAST_DAY = date(2025, 6, 30)
FIRST_CAPTURE = datetime(2026, 12, 2, 7, 0, 0, tzinfo=timezone.utc)
BUSINESS_NAME = "Three Shores Transit"
TURNS_FILE = "transit_turns.jsonl"
LABELS_FILE = "transit_labels.csv"

SCHEMA = """
CREATE TABLE depots (
    depot_id      INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    town          TEXT NOT NULL,
    country       TEXT NOT NULL,
    charger_count INTEGER NOT NULL
);
CREATE TABLE routes (
    route_id      INTEGER PRIMARY KEY,
    route_code    TEXT NOT NULL UNIQUE,
    name          TEXT NOT NULL,
    mode          TEXT NOT NULL CHECK (mode IN ('bus', 'tram')),
    depot_id      INTEGER NOT NULL REFERENCES depots(depot_id),
    length_km     REAL NOT NULL,
    cross_border  INTEGER NOT NULL
);
CREATE TABLE stops (
    stop_id   INTEGER PRIMARY KEY,
    name      TEXT NOT NULL,
    town      TEXT NOT NULL,
    country   TEXT NOT NULL,
    zone      INTEGER NOT NULL
);
CREATE TABLE route_stops (
    route_id  INTEGER NOT NULL REFERENCES routes(route_id),
    stop_id   INTEGER NOT NULL REFERENCES stops(stop_id),
    seq       INTEGER NOT NULL,
    PRIMARY KEY (route_id, seq)
);
CREATE TABLE vehicles (
    vehicle_id            INTEGER PRIMARY KEY,
    fleet_no              TEXT NOT NULL UNIQUE,
    vin                   TEXT NOT NULL UNIQUE,
    mode                  TEXT NOT NULL,
    propulsion            TEXT NOT NULL,
    depot_id              INTEGER NOT NULL REFERENCES depots(depot_id),
    manufacturer          TEXT NOT NULL,
    manufacturer_country  TEXT NOT NULL,
    battery_kwh           INTEGER,
    seats                 INTEGER NOT NULL,
    in_service_date       TEXT NOT NULL
);
CREATE TABLE trips (
    trip_id              INTEGER PRIMARY KEY,
    route_id             INTEGER NOT NULL REFERENCES routes(route_id),
    vehicle_id           INTEGER NOT NULL REFERENCES vehicles(vehicle_id),
    service_date         TEXT NOT NULL,
    scheduled_departure  TEXT NOT NULL,
    actual_departure     TEXT,
    delay_seconds        INTEGER,
    status               TEXT NOT NULL CHECK (status IN ('completed', 'curtailed', 'cancelled')),
    distance_km          REAL,
    energy_wh            INTEGER
);
CREATE TABLE taps (
    tap_id       INTEGER PRIMARY KEY,
    trip_id      INTEGER NOT NULL REFERENCES trips(trip_id),
    stop_id      INTEGER NOT NULL REFERENCES stops(stop_id),
    tap_time     TEXT NOT NULL,
    fare_type    TEXT NOT NULL,
    fare_cents   INTEGER NOT NULL,
    currency     TEXT NOT NULL
);
CREATE TABLE incidents (
    incident_id            INTEGER PRIMARY KEY,
    trip_id                INTEGER NOT NULL REFERENCES trips(trip_id),
    incident_date          TEXT NOT NULL,
    category               TEXT NOT NULL,
    severity               INTEGER NOT NULL,
    delay_caused_seconds   INTEGER NOT NULL,
    resolved_date          TEXT
);
CREATE TABLE staff (
    staff_id    INTEGER PRIMARY KEY,
    depot_id    INTEGER NOT NULL REFERENCES depots(depot_id),
    role        TEXT NOT NULL,
    hired_date  TEXT NOT NULL
);
CREATE TABLE shifts (
    shift_id          INTEGER PRIMARY KEY,
    staff_id          INTEGER NOT NULL REFERENCES staff(staff_id),
    shift_date        TEXT NOT NULL,
    planned_minutes   INTEGER NOT NULL,
    worked_minutes    INTEGER NOT NULL,
    overtime_minutes  INTEGER NOT NULL
);
"""
TABLES = ("depots", "routes", "stops", "route_stops", "vehicles", "trips", "taps", "incidents", "staff",
          "shifts")

#: name, town, country, chargers
DEPOTS = [("Northgate Depot", "Haldenau", "Germany", 28), ("Lindwerk Depot", "Lindwerk", "Germany", 16),
          ("Uferhafen Tram Depot", "Uferhafen", "Germany", 0), ("Seeweid Depot", "Seeweid", "Switzerland", 22),
          ("Rorbach Tram Depot", "Rorbach", "Switzerland", 0), ("Brennfeld Depot", "Brennfeld", "Austria", 14)]
#: towns of each country (stops are spread over them)
TOWNS = {"Germany": ["Haldenau", "Lindwerk", "Uferhafen", "Mooskirch", "Tannried"],
         "Switzerland": ["Seeweid", "Rorbach", "Grenzach", "Hubelwil"],
         "Austria": ["Brennfeld", "Altach am See", "Wolfurtal"]}
STREETS = ["Bahnhof", "Marktplatz", "Seestrasse", "Hafen", "Kirchweg", "Schulhaus", "Rathaus", "Klinik",
           "Post", "Mühle", "Lindenplatz", "Sportpark", "Friedhof", "Gewerbepark", "Uferweg", "Schloss",
           "Berghof", "Wiesental", "Zollamt", "Brücke"]
#: manufacturer, country, the modes and propulsions it supplies
MAKERS = [("Voltaro", "Netherlands", "bus", "battery"), ("Pomorze Autobus", "Poland", "bus", "battery"),
          ("Pomorze Autobus", "Poland", "bus", "diesel"), ("Nordvagn", "Sweden", "bus", "hybrid"),
          ("Nordvagn", "Sweden", "bus", "diesel"), ("Iberbus", "Spain", "bus", "diesel"),
          ("Rheinland Fahrzeugbau", "Germany", "bus", "battery"), ("Brnovia", "Czechia", "tram", "overhead"),
          ("Alpenwerk", "Switzerland", "tram", "overhead")]
MAKER_WEIGHT = [6, 4, 3, 3, 2, 2, 5, 3, 2]
FARES = {"EUR": {"adult": 290, "concession": 170, "child": 110, "pass": 0},
         "CHF": {"adult": 420, "concession": 260, "child": 160, "pass": 0}}
FARE_TYPES = ["adult", "concession", "child", "pass"]
FARE_WEIGHT = [5, 2, 1, 4]
INCIDENT_CATEGORIES = ["traffic", "breakdown", "passenger", "weather", "roadworks", "signal fault"]
ROLES = ["driver", "tram_operator", "controller", "mechanic"]


def _day(rng: random.Random, first: date = FIRST_DAY, last: date = LAST_DAY) -> date:
    return first + timedelta(days=rng.randint(0, (last - first).days))


def _routes(rng: random.Random) -> list[tuple[Any, ...]]:
    """22 routes: buses from the four bus depots, trams from the two tram depots; five cross a border."""
    out = []
    plan = [(1, "bus", 5), (2, "bus", 3), (3, "tram", 4), (4, "bus", 4), (5, "tram", 3), (6, "bus", 3)]
    n = 0
    for depot_id, mode, k in plan:
        town = DEPOTS[depot_id - 1][1]
        for _ in range(k):
            n += 1
            code = f"{'T' if mode == 'tram' else 'B'}{n * 3 + rng.randint(0, 2)}"
            cross = int(mode == "bus" and rng.random() < 0.35)
            home = DEPOTS[depot_id - 1][2]
            dest = rng.choice([t for c, ts in TOWNS.items() for t in ts
                               if t != town and (c != home if cross else c == home)])
            out.append((n, code, f"{town} - {dest}", mode, depot_id,
                        round(rng.uniform(6, 14) if mode == "tram" else rng.uniform(9, 38), 1), cross))
    return out


def build_transit_warehouse(seed: int = TRANSIT_SEED) -> sqlite3.Connection:
    """The warehouse in an in-memory SQLite connection, every row from ``random.Random(seed)``."""
    rng = random.Random(seed)
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO depots VALUES (?, ?, ?, ?, ?)",
                     [(i, *d) for i, d in enumerate(DEPOTS, start=1)])
    depot_country = {i: d[2] for i, d in enumerate(DEPOTS, start=1)}
    routes = _routes(rng)
    conn.executemany("INSERT INTO routes VALUES (?, ?, ?, ?, ?, ?, ?)", routes)

    stops = []
    for country, towns in TOWNS.items():
        for town in towns:
            for street in rng.sample(STREETS, rng.randint(14, 19)):
                stops.append((len(stops) + 1, f"{town} {street}", town, country,
                              1 + (towns.index(town) + rng.randint(0, 2)) % 6))
    conn.executemany("INSERT INTO stops VALUES (?, ?, ?, ?, ?)", stops)
    by_country = {c: [s[0] for s in stops if s[3] == c] for c in TOWNS}
    hubs = {c: ids[:4] for c, ids in by_country.items()}  # the first stops of each country are interchanges
    route_stops: dict[int, list[int]] = {}
    rows_rs = []
    for rid, _, name, mode, depot_id, _, cross in routes:
        home = depot_country[depot_id]
        pool = list(by_country[home])
        if cross:
            pool += by_country[next(c for c, ts in TOWNS.items() if name.split(" - ")[1] in ts)]
        chosen = rng.sample(hubs[home], 2) + rng.sample([s for s in pool if s not in hubs[home]],
                                                        rng.randint(10, 24 if mode == "bus" else 16))
        rng.shuffle(chosen)
        route_stops[rid] = chosen
        rows_rs.extend((rid, sid, k) for k, sid in enumerate(chosen, start=1))
    conn.executemany("INSERT INTO route_stops VALUES (?, ?, ?)", rows_rs)
    stop_country = {s[0]: s[3] for s in stops}

    vehicles = []
    for vid in range(1, 241):
        maker, mcountry, mode, prop = rng.choices(MAKERS, MAKER_WEIGHT)[0]
        depots = [i for i, d in enumerate(DEPOTS, start=1) if ("Tram" in d[0]) == (mode == "tram")]
        depot_id = rng.choice(depots)
        battery = rng.choice([294, 348, 396, 442, 490, 552]) if prop == "battery" else \
            rng.choice([24, 32, 40]) if prop == "hybrid" else None
        seats = rng.randint(70, 112) if mode == "tram" else rng.randint(26, 48)
        vin = "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ0123456789") for _ in range(11)) + f"{vid:06d}"
        vehicles.append((vid, f"{'T' if mode == 'tram' else 'B'}{1000 + vid}", vin, mode, prop, depot_id,
                         maker, mcountry, battery, seats, _day(rng, date(2012, 1, 1), date(2025, 3, 31)).isoformat()))
    conn.executemany("INSERT INTO vehicles VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", vehicles)
    fleet = {}
    for v in vehicles:
        fleet.setdefault((v[5], v[3]), []).append(v)

    route_weight = [rng.randint(2, 9) for _ in routes]
    route_delay = {r[0]: rng.uniform(25, 160) for r in routes}
    trips, taps, incidents = [], [], []
    for tid in range(1, 16001):
        rid, _, _, mode, depot_id, length, _ = rng.choices(routes, route_weight)[0]
        v = rng.choice(fleet[(depot_id, mode)])
        d = _day(rng)
        sched = datetime(d.year, d.month, d.day, rng.randint(5, 22), rng.choice([0, 10, 15, 20, 30, 40, 45, 50]))
        u = rng.random()
        status = "cancelled" if u < 0.035 else "curtailed" if u < 0.065 else "completed"
        if status == "cancelled":
            actual, delay, dist, energy = None, None, None, None
        else:
            delay = max(-45, int(rng.expovariate(1 / route_delay[rid])) - 15)
            actual = (sched + timedelta(seconds=delay)).strftime("%Y-%m-%d %H:%M:%S")
            dist = round(length * (rng.uniform(0.4, 0.8) if status == "curtailed" else 1.0), 1)
            per_km = {"battery": 1150, "hybrid": 2400, "overhead": 3900}.get(v[4])
            energy = None if per_km is None else int(dist * per_km * rng.uniform(0.85, 1.2))
        trips.append((tid, rid, v[0], d.isoformat(), sched.strftime("%Y-%m-%d %H:%M:%S"), actual, delay, status,
                      dist, energy))
        if status == "cancelled":
            continue
        for _ in range(rng.choice([0, 1, 2, 3, 4, 5, 5, 6, 7, 8, 10, 12] if mode == "bus" else [3, 6, 8, 10, 12, 15])):
            sid = rng.choice(route_stops[rid])
            cur = "CHF" if stop_country[sid] == "Switzerland" else "EUR"
            ftype = rng.choices(FARE_TYPES, FARE_WEIGHT)[0]
            when = sched + timedelta(seconds=max(0, delay) + rng.randint(0, 2400))
            taps.append((len(taps) + 1, tid, sid, when.strftime("%Y-%m-%d %H:%M:%S"), ftype, FARES[cur][ftype], cur))
        if rng.random() < 0.11:
            resolved = None if rng.random() < 0.09 else (d + timedelta(days=rng.randint(0, 20))).isoformat()
            incidents.append((len(incidents) + 1, tid, d.isoformat(), rng.choice(INCIDENT_CATEGORIES),
                              rng.choices([1, 2, 3, 4], [6, 3, 2, 1])[0], rng.randint(30, 1800), resolved))
    conn.executemany("INSERT INTO trips VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", trips)
    conn.executemany("INSERT INTO taps VALUES (?, ?, ?, ?, ?, ?, ?)", taps)
    conn.executemany("INSERT INTO incidents VALUES (?, ?, ?, ?, ?, ?, ?)", incidents)

    staff = []
    for sid in range(1, 221):
        depot_id = rng.randint(1, len(DEPOTS))
        tram = "Tram" in DEPOTS[depot_id - 1][0]
        role = rng.choices(ROLES, [0, 6, 1, 1] if tram else [6, 0, 1, 1])[0]
        staff.append((sid, depot_id, role, _day(rng, date(2001, 1, 1), date(2024, 12, 31)).isoformat()))
    conn.executemany("INSERT INTO staff VALUES (?, ?, ?, ?)", staff)
    shifts = []
    for k in range(1, 12001):
        planned = rng.choice([420, 480, 480, 510])
        worked = planned + max(-30, int(rng.gauss(8, 35)))
        shifts.append((k, rng.randint(1, 220), _day(rng).isoformat(), planned, worked, max(0, worked - planned)))
    conn.executemany("INSERT INTO shifts VALUES (?, ?, ?, ?, ?, ?)", shifts)
    conn.commit()
    return conn

