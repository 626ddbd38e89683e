"""The learning set's warehouse: an online academy's rows, built in memory from a seed.

*Brightpath Academy*: instructors, courses, learners, enrolments, lesson views, quiz attempts, payments
and support tickets, 2023-01-01 to 2025-06-30. The set's cases
(questions, SQL with the rows it returned, answers, constructed labels) are the data file
``axon_eval/fixtures/sets/learning.jsonl``; the shared builder
:mod:`axon_eval.fixtures.labelled` writes them under ``data/turns``.
The tests re-run every stored statement against :func:`build_learning_warehouse`.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import date, datetime, timedelta, timezone
from itertools import accumulate


#: Seed of the warehouse's rows.
LEARNING_SEED = 20261207
#: Seed of timings and of the turn assignment.
LEARNING_TURN_SEED = 20261208
FIRST_DAY = date(2023, 1, 1)
LAST_DAY = date(2025, 6, 30)
FIRST_CAPTURE = datetime(2026, 12, 8, 8, 0, 0, tzinfo=timezone.utc)
BUSINESS_NAME = "Brightpath Academy"
TURNS_FILE = "learning_turns.jsonl"
LABELS_FILE = "learning_labels.csv"
#: a quiz attempt passes at this score (0-100)
PASS_MARK = 70

SCHEMA = """
CREATE TABLE instructors (
    instructor_id  INTEGER PRIMARY KEY,
    name           TEXT NOT NULL,
    country        TEXT NOT NULL,
    joined_date    TEXT NOT NULL
);
CREATE TABLE courses (
    course_id      INTEGER PRIMARY KEY,
    course_code    TEXT NOT NULL UNIQUE,
    title          TEXT NOT NULL,
    subject        TEXT NOT NULL,
    level          TEXT NOT NULL CHECK (level IN ('beginner', 'intermediate', 'advanced')),
    price_cents    INTEGER NOT NULL,
    launch_date    TEXT NOT NULL,
    instructor_id  INTEGER NOT NULL REFERENCES instructors(instructor_id),
    lesson_count   INTEGER NOT NULL
);
CREATE TABLE learners (
    learner_id     INTEGER PRIMARY KEY,
    learner_code   TEXT NOT NULL UNIQUE,
    country        TEXT NOT NULL,
    signup_date    TEXT NOT NULL,
    plan           TEXT NOT NULL CHECK (plan IN ('free', 'plus', 'team'))
);
CREATE TABLE enrolments (
    enrolment_id    INTEGER PRIMARY KEY,
    learner_id      INTEGER NOT NULL REFERENCES learners(learner_id),
    course_id       INTEGER NOT NULL REFERENCES courses(course_id),
    enrolled_date   TEXT NOT NULL,
    completed_date  TEXT,
    refunded        INTEGER NOT NULL CHECK (refunded IN (0, 1)),
    rating          INTEGER CHECK (rating BETWEEN 1 AND 5)
);
CREATE TABLE lesson_views (
    view_id         INTEGER PRIMARY KEY,
    enrolment_id    INTEGER NOT NULL REFERENCES enrolments(enrolment_id),
    lesson_no       INTEGER NOT NULL,
    viewed_date     TEXT NOT NULL,
    watch_seconds   INTEGER NOT NULL
);
CREATE TABLE quiz_attempts (
    attempt_id      INTEGER PRIMARY KEY,
    enrolment_id    INTEGER NOT NULL REFERENCES enrolments(enrolment_id),
    attempted_date  TEXT NOT NULL,
    score           INTEGER NOT NULL CHECK (score BETWEEN 0 AND 100),
    passed          INTEGER NOT NULL CHECK (passed IN (0, 1))
);
CREATE TABLE payments (
    payment_id      INTEGER PRIMARY KEY,
    learner_id      INTEGER NOT NULL REFERENCES learners(learner_id),
    enrolment_id    INTEGER REFERENCES enrolments(enrolment_id),
    paid_date       TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('course', 'subscription')),
    amount_cents    INTEGER NOT NULL,
    currency        TEXT NOT NULL CHECK (currency IN ('USD', 'EUR', 'GBP', 'INR'))
);
CREATE TABLE support_tickets (
    ticket_id       INTEGER PRIMARY KEY,
    learner_id      INTEGER NOT NULL REFERENCES learners(learner_id),
    opened_date     TEXT NOT NULL,
    closed_date     TEXT,
    category        TEXT NOT NULL,
    priority        TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
    channel         TEXT NOT NULL CHECK (channel IN ('email', 'chat', 'app'))
);
"""
TABLES = ("instructors", "courses", "learners", "enrolments", "lesson_views", "quiz_attempts", "payments",
          "support_tickets")

#: name, country, joined date, rating shift
INSTRUCTORS = [("Aisha Bello", "Nigeria", "2022-09-12", 0.25), ("Rahul Mehta", "India", "2022-10-03", 0.05),
               ("Camila Souza", "Brazil", "2022-11-21", 0.35), ("Tom Hargreaves", "United Kingdom", "2022-08-01", -0.1),
               ("Emily Chen", "Canada", "2023-01-09", 0.15), ("Lukas Brandt", "Germany", "2023-02-27", -0.25),
               ("Priya Nair", "India", "2022-12-05", 0.3), ("Marcus Reed", "United States", "2022-07-18", -0.05),
               ("Ana Kowalska", "Poland", "2023-03-20", 0.1), ("Kenji Watanabe", "Japan", "2023-11-06", 0.0),
               ("Thiago Lima", "Brazil", "2023-06-12", -0.15)]
#: code, title, subject, level, list price (US cents), launch date, instructor (1-based), lessons,
#: enrolment weight, completion shift, mean watch seconds per view, quiz score shift
COURSES = [("DS-101", "Data Science 101", "Data Science", "beginner", 4900, "2023-01-09", 2, 12, 14, 0.05, 610, 2),
           ("DS-210", "Machine Learning in Practice", "Data Science", "intermediate", 8900, "2023-03-06", 7, 14, 9, 0.0, 720, -3),
           ("DS-330", "Deep Learning Projects", "Data Science", "advanced", 12900, "2023-09-04", 7, 16, 4, -0.05, 780, -6),
           ("SQL-101", "Intro to SQL", "Programming", "beginner", 2900, "2023-01-16", 8, 10, 11, 0.08, 540, 4),
           ("SQL-101R", "Intro to SQL", "Programming", "beginner", 3900, "2024-09-02", 5, 11, 9, 0.12, 560, 6),
           ("PY-100", "Python Foundations", "Programming", "beginner", 3900, "2023-02-06", 2, 12, 13, 0.02, 590, 1),
           ("PY-100B", "Python Foundations", "Programming", "beginner", 3400, "2023-11-13", 3, 10, 6, 0.1, 520, 5),
           ("WEB-120", "Modern JavaScript", "Programming", "intermediate", 5900, "2023-04-03", 8, 13, 7, -0.04, 650, -2),
           ("UX-101", "UX Design Basics", "Design", "beginner", 4400, "2023-02-20", 3, 9, 7, 0.06, 500, 3),
           ("UX-240", "Design Systems at Scale", "Design", "advanced", 9900, "2024-01-15", 6, 12, 3, -0.08, 700, -4),
           ("GD-110", "Figma for Beginners", "Design", "beginner", 2400, "2023-06-05", 9, 8, 6, 0.1, 430, 5),
           ("MK-101", "Digital Marketing Essentials", "Marketing", "beginner", 3900, "2023-01-23", 4, 10, 8, 0.0, 520, 0),
           ("MK-220", "SEO Deep Dive", "Marketing", "intermediate", 6900, "2023-08-14", 4, 11, 4, -0.06, 600, -3),
           ("MK-230", "Growth Analytics", "Marketing", "intermediate", 7900, "2024-04-08", 1, 12, 4, 0.04, 640, 1),
           ("BUS-101", "Project Management Fundamentals", "Business", "beginner", 4900, "2023-03-13", 5, 10, 8, 0.03, 550, 2),
           ("BUS-210", "Financial Modelling in Excel", "Business", "intermediate", 7400, "2023-05-22", 4, 13, 6, -0.02, 690, -1),
           ("BUS-310", "Negotiation Masterclass", "Business", "advanced", 11900, "2024-02-12", 1, 9, 3, 0.02, 610, 0),
           ("LNG-101", "Spanish for Travellers", "Languages", "beginner", 1900, "2023-04-17", 11, 15, 6, -0.1, 380, 3),
           ("LNG-120", "Business English", "Languages", "intermediate", 2900, "2023-07-03", 4, 14, 7, -0.05, 450, 1),
           ("LNG-130", "Japanese Kana in 30 Days", "Languages", "beginner", 2400, "2024-05-06", 10, 15, 4, -0.12, 360, 2),
           ("CLD-200", "Cloud Fundamentals on AWS", "Cloud", "intermediate", 8400, "2023-10-02", 6, 12, 6, 0.0, 670, -2),
           ("CLD-310", "Kubernetes for Developers", "Cloud", "advanced", 10900, "2024-06-03", 8, 14, 4, -0.07, 740, -5)]
#: learner country, weight
COUNTRIES = [("India", 22), ("United States", 16), ("Brazil", 10), ("United Kingdom", 8), ("Nigeria", 8),
             ("Philippines", 6), ("Germany", 6), ("Canada", 5), ("Mexico", 5), ("France", 4), ("Spain", 4),
             ("Japan", 3), ("Kenya", 3)]
CURRENCY_OF = {"India": "INR", "United Kingdom": "GBP", "Germany": "EUR", "France": "EUR", "Spain": "EUR"}
#: minor units of the currency per US cent of list price (INR prices are regional: whole rupees)
FX = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "INR": 28.0}
PLANS = [("free", 64), ("plus", 28), ("team", 8)]
#: monthly subscription in US cents, by plan
SUBSCRIPTION_CENTS = {"plus": 1900, "team": 3900}
COMPLETION_BY_LEVEL = {"beginner": 0.5, "intermediate": 0.38, "advanced": 0.27}
#: category, weight, how each intake channel types it (email, chat, app)
TICKET_CATEGORIES = [("billing", 36, ("Billing", "billing", "Billing ")),
                     ("technical", 30, ("Technical", "technical", "Technical")),
                     ("course content", 20, ("Course content", "course content", "Course content")),
                     ("account access", 14, ("Account access", "Account access", "account access"))]
CHANNELS = [("email", 50), ("chat", 30), ("app", 20)]
PRIORITIES = [("low", 30), ("normal", 48), ("high", 17), ("urgent", 5)]


def _day(rng: random.Random, first: date = FIRST_DAY, last: date = LAST_DAY) -> date:
    return first + timedelta(days=rng.randint(0, (last - first).days))


def _clamp(v: float, lo: int, hi: int) -> int:
    return max(lo, min(hi, int(round(v))))


def build_learning_warehouse(seed: int = LEARNING_SEED) -> sqlite3.Connection:
    """The warehouse in an in-memory SQLite connection, every row from ``random.Random(seed)``."""
    rng = random.Random(seed)
    conn = sqlite3.connect(":memory:")
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO instructors VALUES (?, ?, ?, ?)", [(i, *t[:3]) for i, t in enumerate(INSTRUCTORS, start=1)])
    conn.executemany("INSERT INTO courses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     [(i, *c[:8]) for i, c in enumerate(COURSES, start=1)])

    learners = []
    span = (LAST_DAY - FIRST_DAY).days
    for lid in range(1, 9001):
        country = rng.choices([c[0] for c in COUNTRIES], [c[1] for c in COUNTRIES])[0]
        plan = rng.choices([p[0] for p in PLANS], [p[1] for p in PLANS])[0]
        signup = FIRST_DAY + timedelta(days=int(span * rng.random() ** 0.8))  # growing: more recent signups
        learners.append((lid, f"L-{100000 + lid * 37 % 900000:06d}", country, signup.isoformat(), plan))
    conn.executemany("INSERT INTO learners VALUES (?, ?, ?, ?, ?)", learners)

    enrolments, views, attempts, payments = [], [], [], []
    course_ids = list(range(1, len(COURSES) + 1))
    for lid, _, country, signup_s, plan in learners:
        signup = date.fromisoformat(signup_s)
        cur = CURRENCY_OF.get(country, "USD")
        for _ in range(min(9, int(rng.paretovariate(1.5)) + (plan != "free"))):
            cid = rng.choices(course_ids, [c[8] for c in COURSES])[0]
            c = COURSES[cid - 1]
            start = max(signup, date.fromisoformat(c[5]))
            if start > LAST_DAY:
                continue
            enrolled = start + timedelta(days=int(rng.expovariate(1 / 150)))
            if enrolled > LAST_DAY:
                continue
            eid = len(enrolments) + 1
            refunded = int(plan == "free" and rng.random() < 0.07)
            p_done = COMPLETION_BY_LEVEL[c[3]] + c[9] + 0.12 * (plan == "team")
            done = None
            rating = None
            if not refunded and rng.random() < p_done:
                d = enrolled + timedelta(days=3 + int(rng.gammavariate(2.0, 16.0)))
                if d <= LAST_DAY:
                    done = d
                    if rng.random() < 0.62:
                        rating = _clamp(rng.gauss(4.0 + INSTRUCTORS[c[6] - 1][3], 0.8), 1, 5)
            enrolments.append((eid, lid, cid, enrolled.isoformat(), None if done is None else done.isoformat(), refunded,
                               rating))
            if plan == "free":
                amount = int(c[4] * FX[cur]) // 100 * 100 if cur == "INR" else int(c[4] * FX[cur])
                payments.append((lid, eid, enrolled.isoformat(), "course", amount, cur))
            # lesson views: every lesson for a finished course, a prefix otherwise
            end = done or min(LAST_DAY, enrolled + timedelta(days=75))
            n_lessons = c[7] if done else (rng.randint(0, 2) if refunded else rng.randint(0, c[7] - 1))
            for lesson in range(1, n_lessons + 1):
                for _ in range(1 + (rng.random() < 0.12)):
                    day = enrolled + timedelta(days=rng.randint(0, (end - enrolled).days))
                    views.append((eid, lesson, day.isoformat(), _clamp(rng.gauss(c[10], 170), 20, 2700)))
            if n_lessons >= c[7] // 2 and rng.random() < 0.85:
                for _ in range(3):
                    day = enrolled + timedelta(days=rng.randint(0, (end - enrolled).days))
                    score = _clamp(rng.gauss(71 + c[11] + 6 * (done is not None), 14), 0, 100)
                    attempts.append((eid, day.isoformat(), score, int(score >= PASS_MARK)))
                    if score >= PASS_MARK or rng.random() < 0.45:
                        break
        if plan != "free":
            amount = int(SUBSCRIPTION_CENTS[plan] * FX[cur]) // 100 * 100 if cur == "INR" else int(SUBSCRIPTION_CENTS[plan] * FX[cur])
            k = 0
            while True:
                y, m = signup.year + (signup.month - 1 + k) // 12, (signup.month - 1 + k) % 12 + 1
                day = date(y, m, min(signup.day, 28))
                if day > LAST_DAY:
                    break
                payments.append((lid, None, day.isoformat(), "subscription", amount, cur))
                k += 1
    conn.executemany("INSERT INTO enrolments VALUES (?, ?, ?, ?, ?, ?, ?)", enrolments)
    conn.executemany("INSERT INTO lesson_views (enrolment_id, lesson_no, viewed_date, watch_seconds) VALUES (?, ?, ?, ?)",
                     sorted(views, key=lambda v: (v[2], v[0], v[1])))
    conn.executemany("INSERT INTO quiz_attempts (enrolment_id, attempted_date, score, passed) VALUES (?, ?, ?, ?)",
                     sorted(attempts, key=lambda a: (a[1], a[0])))
    conn.executemany("INSERT INTO payments (learner_id, enrolment_id, paid_date, kind, amount_cents, currency) "
                     "VALUES (?, ?, ?, ?, ?, ?)", sorted(payments, key=lambda p: (p[2], p[0])))

    tickets = []
    learner_cum = list(accumulate(1.0 + 2.0 * (lr[4] == "team") for lr in learners))
    for _ in range(4200):
        lid, _, _, signup_s, _ = rng.choices(learners, cum_weights=learner_cum)[0]
        signup = date.fromisoformat(signup_s)
        opened = _day(rng, signup, min(LAST_DAY, signup + timedelta(days=400)))
        k = rng.choices(range(len(TICKET_CATEGORIES)), [t[1] for t in TICKET_CATEGORIES])[0]
        ch = rng.choices(range(len(CHANNELS)), [c[1] for c in CHANNELS])[0]
        recent = (LAST_DAY - opened).days < 30
        closed = None if rng.random() < (0.4 if recent else 0.03) else opened + timedelta(days=int(rng.expovariate(1 / 3.5)))
        if closed is not None and closed > LAST_DAY:
            closed = None
        tickets.append((lid, opened.isoformat(), None if closed is None else closed.isoformat(), TICKET_CATEGORIES[k][2][ch],
                        rng.choices([p[0] for p in PRIORITIES], [p[1] for p in PRIORITIES])[0], CHANNELS[ch][0]))
    conn.executemany("INSERT INTO support_tickets (learner_id, opened_date, closed_date, category, priority, channel) "
                     "VALUES (?, ?, ?, ?, ?, ?)", sorted(tickets, key=lambda t: (t[1], t[0])))
    conn.commit()
    return conn

