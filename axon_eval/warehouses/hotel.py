"""The hotel set's warehouse: a European hotel group's rows, built in memory from a seed.

*Solenne Hotel Group* (ten hotels in seven European countries): hotels, rooms, guests, bookings, folio
charges in integer cents of the hotel's currency, reviews, housekeeping shifts in minutes and the
electricity use of each hotel-day in kWh, stays from 2023-01-01 to 2025-06-30. The set's cases
(questions, SQL with the rows it returned, answers, constructed labels) are the data file
``axon_eval/fixtures/sets/hotel.jsonl``; the shared builder
:mod:`axon_eval.fixtures.labelled` writes them under ``data/turns``.
The tests re-run every stored statement against :func:`build_hotel_warehouse`.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import date, datetime, timedelta, timezone
from itertools import accumulate
from typing import Any


#: Seed of the warehouse's rows.
HOTEL_SEED = 20261205
#: Seed of timings and of the turn assignment.
HOTEL_TURN_SEED = 20261206
FIRST_DAY = date(2023, 1, 1)
LAST_DAY = date(2025, 6, 30)
#: bookings taken by LAST_DAY may be for stays up to this day (status confirmed or cancelled)
LAST_FUTURE_CHECK_IN = date(2025, 9, 30)
FIRST_CAPTURE = datetime(2026, 12, 6, 8, 0, 0, tzinfo=timezone.utc)
BUSINESS_NAME = "Solenne Hotel Group"
TURNS_FILE = "hotel_turns.jsonl"
LABELS_FILE = "hotel_labels.csv"

SCHEMA = """
CREATE TABLE hotels (
    hotel_id      INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    city          TEXT NOT NULL,
    country       TEXT NOT NULL,
    star_rating   INTEGER NOT NULL,
    opened_year   INTEGER NOT NULL,
    currency      TEXT NOT NULL
);
CREATE TABLE rooms (
    room_id          INTEGER PRIMARY KEY,
    hotel_id         INTEGER NOT NULL REFERENCES hotels(hotel_id),
    room_number      TEXT NOT NULL,
    room_type        TEXT NOT NULL CHECK (room_type IN ('standard', 'superior', 'family', 'suite')),
    capacity         INTEGER NOT NULL,
    base_rate_cents  INTEGER NOT NULL
);
CREATE TABLE guests (
    guest_id      INTEGER PRIMARY KEY,
    guest_code    TEXT NOT NULL UNIQUE,
    nationality   TEXT NOT NULL,
    loyalty_tier  TEXT NOT NULL CHECK (loyalty_tier IN ('none', 'silver', 'gold', 'platinum')),
    joined_date   TEXT NOT NULL
);
CREATE TABLE bookings (
    booking_id    INTEGER PRIMARY KEY,
    booking_ref   TEXT NOT NULL UNIQUE,
    guest_id      INTEGER NOT NULL REFERENCES guests(guest_id),
    hotel_id      INTEGER NOT NULL REFERENCES hotels(hotel_id),
    room_id       INTEGER NOT NULL REFERENCES rooms(room_id),
    booked_date   TEXT NOT NULL,
    check_in      TEXT NOT NULL,
    check_out     TEXT NOT NULL,
    nights        INTEGER NOT NULL,
    adults        INTEGER NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('confirmed', 'cancelled', 'no_show', 'completed')),
    channel       TEXT NOT NULL CHECK (channel IN ('website', 'phone', 'ota', 'travel_agent', 'corporate'))
);
CREATE TABLE folio_charges (
    charge_id     INTEGER PRIMARY KEY,
    booking_id    INTEGER NOT NULL REFERENCES bookings(booking_id),
    charge_date   TEXT NOT NULL,
    category      TEXT NOT NULL CHECK (category IN ('room', 'food_beverage', 'spa', 'minibar', 'parking', 'no_show_fee')),
    amount_cents  INTEGER NOT NULL,
    currency      TEXT NOT NULL
);
CREATE TABLE reviews (
    review_id           INTEGER PRIMARY KEY,
    booking_id          INTEGER NOT NULL UNIQUE REFERENCES bookings(booking_id),
    submitted_date      TEXT NOT NULL,
    score               INTEGER NOT NULL CHECK (score BETWEEN 1 AND 10),
    cleanliness_score   INTEGER,
    review_text         TEXT
);
CREATE TABLE housekeeping_shifts (
    shift_id        INTEGER PRIMARY KEY,
    hotel_id        INTEGER NOT NULL REFERENCES hotels(hotel_id),
    staff_code      TEXT NOT NULL,
    shift_date      TEXT NOT NULL,
    minutes_worked  INTEGER NOT NULL,
    rooms_cleaned   INTEGER
);
CREATE TABLE energy_days (
    hotel_id    INTEGER NOT NULL REFERENCES hotels(hotel_id),
    day         TEXT NOT NULL,
    energy_kwh  REAL NOT NULL,
    PRIMARY KEY (hotel_id, day)
);
"""
TABLES = ("hotels", "rooms", "guests", "bookings", "folio_charges", "reviews", "housekeeping_shifts", "energy_days")

#: name, city, country, stars, opened year, currency, rooms, booking weight, review quality shift,
#: mean housekeeping shift minutes
HOTELS = [("Hotel Aurora Lisbon", "Lisbon", "Portugal", 4, 2009, "EUR", 96, 11, 0.3, 402),
          ("Solenne Porto Ribeira", "Porto", "Portugal", 4, 2016, "EUR", 64, 8, 0.6, 431),
          ("Villa Ceres Florence", "Florence", "Italy", 5, 1998, "EUR", 48, 7, 0.9, 447),
          ("Grand Hotel Vesta Rome", "Rome", "Italy", 5, 1987, "EUR", 122, 12, 0.1, 415),
          ("Solenne Berlin Mitte", "Berlin", "Germany", 4, 2012, "EUR", 110, 12, -0.2, 388),
          ("Hotel Isar Munich", "Munich", "Germany", 3, 2004, "EUR", 84, 10, -0.6, 396),
          ("The Larch Edinburgh", "Edinburgh", "United Kingdom", 4, 2019, "GBP", 58, 8, 0.5, 428),
          ("Solenne Zurich Lakeside", "Zurich", "Switzerland", 5, 2001, "CHF", 72, 7, 0.4, 438),
          ("Casa Alba Seville", "Seville", "Spain", 3, 2014, "EUR", 70, 9, -0.1, 409),
          ("Hotel Meridiane Lyon", "Lyon", "France", 4, 2021, "EUR", 52, 6, -0.4, 421)]
#: room type, capacity, weight, rate multiplier
ROOM_TYPES = [("standard", 2, 55, 1.0), ("superior", 2, 25, 1.3), ("family", 4, 10, 1.55), ("suite", 3, 10, 2.4)]
#: base nightly rate in cents of the hotel's currency, by star rating
RATE_BY_STARS = {3: 9200, 4: 14500, 5: 26500}
#: nationality, weight
NATIONALITIES = [("Germany", 18), ("United Kingdom", 14), ("France", 11), ("United States", 10), ("Italy", 9),
                 ("Spain", 8), ("Netherlands", 7), ("Portugal", 5), ("Switzerland", 5), ("Austria", 4),
                 ("Sweden", 4), ("Japan", 4), ("Brazil", 3)]
#: how much more often a loyalty member comes back than a guest with no tier
TIER_PULL = {"none": 0.0, "silver": 0.5, "gold": 1.2, "platinum": 2.5}
TIERS = [("none", 60), ("silver", 22), ("gold", 13), ("platinum", 5)]
CHANNELS = [("website", 34), ("phone", 10), ("ota", 38), ("travel_agent", 8), ("corporate", 10)]
#: nights, weight
STAY_LENGTHS = [(1, 14), (2, 22), (3, 20), (4, 13), (5, 9), (6, 6), (7, 8), (8, 2), (9, 1), (10, 2), (12, 1), (14, 2)]
REVIEW_TEXTS = ["Lovely staff and a quiet room.", "Breakfast was excellent.", "Room smaller than expected.",
                "Great location, slow check-in.", "Spotless, would stay again.", "Noisy at night.",
                "The spa was the highlight.", "Air conditioning struggled."]


def _day(rng: random.Random, first: date = FIRST_DAY, last: date = LAST_DAY) -> date:
    return first + timedelta(days=rng.randint(0, (last - first).days))


def _season(d: date) -> float:
    return 1.0 + 0.35 * (d.month in (6, 7, 8, 9)) - 0.15 * (d.month in (1, 2, 11))


def build_hotel_warehouse(seed: int = HOTEL_SEED) -> sqlite3.Connection:
    """The warehouse in an in-memory SQLite connection, every row from ``random.Random(seed)``."""
    rng = random.Random(seed)
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO hotels VALUES (?, ?, ?, ?, ?, ?, ?)",
                     [(i, *h[:6]) for i, h in enumerate(HOTELS, start=1)])

    rooms: list[tuple[Any, ...]] = []
    by_hotel: dict[int, list[tuple[Any, ...]]] = {}
    for hid, h in enumerate(HOTELS, start=1):
        for k in range(h[6]):
            rtype, cap, _, mult = rng.choices(ROOM_TYPES, [t[2] for t in ROOM_TYPES])[0]
            rate = int(RATE_BY_STARS[h[3]] * mult * rng.uniform(0.92, 1.1)) // 100 * 100
            row = (len(rooms) + 1, hid, f"{1 + k // 20}{k % 20 + 1:02d}", rtype, cap, rate)
            rooms.append(row)
            by_hotel.setdefault(hid, []).append(row)
    conn.executemany("INSERT INTO rooms VALUES (?, ?, ?, ?, ?, ?)", rooms)

    guests = []
    for gid in range(1, 9001):
        nat = rng.choices([n[0] for n in NATIONALITIES], [n[1] for n in NATIONALITIES])[0]
        tier = rng.choices([t[0] for t in TIERS], [t[1] for t in TIERS])[0]
        guests.append((gid, f"G-{10000 + gid * 13 % 90000:05d}", nat, tier,
                       _day(rng, date(2012, 1, 1), date(2025, 6, 1)).isoformat()))
    conn.executemany("INSERT INTO guests VALUES (?, ?, ?, ?, ?)", guests)
    # regulars: a heavy tail of guests who come back often (loyalty members more so)
    guest_cum = list(accumulate(min(25.0, rng.paretovariate(2.2)) * (1.0 + TIER_PULL[g[3]]) for g in guests))
    guest_ids = [g[0] for g in guests]

    bookings, charges, reviews = [], [], []
    hotel_ids = list(range(1, len(HOTELS) + 1))
    for bid in range(1, 30001):
        hid = rng.choices(hotel_ids, [h[7] for h in HOTELS])[0]
        h = HOTELS[hid - 1]
        room = rng.choice(by_hotel[hid])
        gid = rng.choices(guest_ids, cum_weights=guest_cum)[0]
        check_in = _day(rng, FIRST_DAY, LAST_FUTURE_CHECK_IN)
        nights = rng.choices([s[0] for s in STAY_LENGTHS], [s[1] for s in STAY_LENGTHS])[0]
        check_out = check_in + timedelta(days=nights)
        booked = check_in - timedelta(days=int(rng.expovariate(1 / 38)))
        if booked > LAST_DAY:
            booked = LAST_DAY - timedelta(days=rng.randint(0, 120))
        channel = rng.choices([c[0] for c in CHANNELS], [c[1] for c in CHANNELS])[0]
        adults = min(room[4], rng.choices([1, 2, 3, 4], [30, 55, 10, 5])[0])
        u = rng.random()
        if check_out > LAST_DAY:
            status = "cancelled" if u < 0.1 else "confirmed"
        else:
            status = "cancelled" if u < 0.13 else "no_show" if u < 0.17 else "completed"
        bookings.append((bid, f"SHG-{bid * 7 + 100000}", gid, hid, room[0], booked.isoformat(), check_in.isoformat(),
                         check_out.isoformat(), nights, adults, status, channel))
        cur = h[5]
        if status == "no_show":
            charges.append((len(charges) + 1, bid, check_in.isoformat(), "no_show_fee", room[5], cur))
        if status != "completed":
            continue
        rate = int(room[5] * _season(check_in) * {"corporate": 0.85, "ota": 1.05}.get(channel, 1.0))
        for k in range(nights):
            charges.append((len(charges) + 1, bid, (check_in + timedelta(days=k)).isoformat(), "room", rate, cur))
        extras = [("food_beverage", rng.choices([0, 1, 2, 3], [25, 35, 25, 15])[0], (1800, 14000)),
                  ("spa", rng.choices([0, 1, 2, 3], [78, 10, 7, 5])[0] if h[3] >= 4 else 0, (6500, 24000)),
                  ("minibar", rng.choices([0, 1, 2], [65, 25, 10])[0], (600, 4800)),
                  ("parking", 1 if rng.random() < 0.15 else 0, (2500 * nights, 3200 * nights))]
        for cat, n, (lo, hi) in extras:
            for _ in range(n):
                day = check_in + timedelta(days=rng.randint(0, max(0, nights - 1)))
                charges.append((len(charges) + 1, bid, day.isoformat(), cat, rng.randint(lo, hi) // 10 * 10, cur))
        submitted = check_out + timedelta(days=rng.randint(1, 21))
        if rng.random() < 0.45 and submitted <= LAST_DAY:
            base = 7.6 + h[8] + 0.5 * (room[3] == "suite") - 0.4 * (channel == "ota")
            score = max(1, min(10, round(rng.gauss(base, 1.7))))
            clean = None if rng.random() < 0.3 else max(1, min(10, round(rng.gauss(base + 0.3, 1.4))))
            text = rng.choice(REVIEW_TEXTS) if rng.random() < 0.4 else None
            reviews.append((len(reviews) + 1, bid, submitted.isoformat(), score, clean, text))
    conn.executemany("INSERT INTO bookings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", bookings)
    conn.executemany("INSERT INTO folio_charges VALUES (?, ?, ?, ?, ?, ?)", charges)
    conn.executemany("INSERT INTO reviews VALUES (?, ?, ?, ?, ?, ?)", reviews)

    # housekeeping: a few shifts per hotel-day, more for bigger hotels; rooms cleaned sometimes not recorded
    shifts, energy = [], []
    n_days = (LAST_DAY - FIRST_DAY).days + 1
    for hid, h in enumerate(HOTELS, start=1):
        kwh_per_room = rng.uniform(9.0, 15.0) * (1.25 if h[3] == 5 else 1.0)
        for k in range(n_days):
            d = FIRST_DAY + timedelta(days=k)
            for _ in range(max(1, round(h[6] / 30 * rng.uniform(0.6, 1.3) * _season(d)))):
                minutes = max(180, min(600, int(rng.gauss(h[9], 55))))
                cleaned = None if rng.random() < 0.09 else max(4, int(minutes / rng.uniform(26, 38)))
                shifts.append((len(shifts) + 1, hid, f"HK-{hid:02d}-{rng.randint(1, 14):02d}", d.isoformat(), minutes,
                               cleaned))
            heat = 1.0 + 0.22 * (d.month in (12, 1, 2)) + 0.3 * (d.month in (7, 8))
            energy.append((hid, d.isoformat(), round(h[6] * kwh_per_room * heat * rng.uniform(0.85, 1.15), 1)))
    conn.executemany("INSERT INTO housekeeping_shifts VALUES (?, ?, ?, ?, ?, ?)", shifts)
    conn.executemany("INSERT INTO energy_days VALUES (?, ?, ?)", energy)
    conn.commit()
    return conn

