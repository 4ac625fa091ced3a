#!/usr/bin/env python3
"""The workload scripts/make-upgrade-fixtures.sh runs on a release's host
(started with --demo): what a platform in use holds, through the HTTP API
the release has. A step whose route the release does not have (404/405) is
skipped. Writes the credentials the release accepted to the JSON file named.

Usage: upgrade-workload.py BASE_URL ADMIN_TOKEN OUT.json
"""
import json
import struct
import sys
import urllib.error
import urllib.request
import zlib

BASE, ADMIN, OUT = sys.argv[1], sys.argv[2], sys.argv[3]
VIEWER, VIEWER2, MODEL = "demo-viewer-token", "demo-viewer2-token", "demo-model-token"
MEMBER = "fixture-member-token"
VIDEO = "00000000-0000-4000-a000-00000000000%d"
DEMO_RECORDING = "00000000-0000-4000-b000-000000000001"


def png():
    """A 1x1 PNG."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x80\x00\xff")) + chunk(b"IEND", b""))


def call(method, path, token=None, body=None, raw=None, content_type=None):
    headers = {}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if raw is not None:
        data = raw
        headers["Content-Type"] = content_type
    req = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req) as r:
            text = r.read().decode()
            status = r.status
    except urllib.error.HTTPError as e:
        text = e.read().decode()
        status = e.code
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text


def must(expected, method, path, token=None, body=None, **kw):
    status, answer = call(method, path, token, body, **kw)
    if status not in expected:
        sys.exit(f"{method} {path}: {status} {answer}")
    return answer


def has_route(status):
    return status not in (404, 405)


def data_id(answer):
    data = answer.get("data", answer) if isinstance(answer, dict) else answer
    return data["id"]


# A member made by the administrator, signing in with a static token.
viewer_role = must([200], "GET", "/items/platform_roles?filter[name][_eq]=Viewer", ADMIN)["data"][0]["id"]
must([200], "POST", "/items/platform_users", ADMIN,
     {"email": "mira@fixture.local", "first_name": "Mira", "last_name": "Fixture",
      "role": viewer_role, "token": MEMBER})

# A registered member, signing in with a password.
reader = None
status, _ = call("POST", "/users/register", None,
                 {"email": "reader@fixture.local", "password": "fixture-password",
                  "first_name": "Rae", "last_name": "Reader"})
if has_route(status):
    if status != 204:
        sys.exit(f"register: {status}")
    reader = must([200], "POST", "/auth/login", None,
                  {"email": "reader@fixture.local", "password": "fixture-password"})["data"]["access_token"]

# Recordings: create, share (publish, public), duplicate, play, archive.
events = [{"timestamp": t, "deviceIndex": 0, "deviceName": "D", "actuatorIndex": 0,
           "actuatorType": "Vibrate", "value": v} for t, v in [(0, 40), (500, 80), (1500, 0)]]
recording = {"title": "Fixture Wave", "duration": 3000, "tags": ["fixture"],
             "device_info": [{"name": "D", "index": 0, "capabilities": ["Vibrate"]}],
             "events": events}
wave = data_id(must([200, 201], "POST", "/svc/recordings", VIEWER, recording))
must([200], "PATCH", f"/svc/recordings/{wave}", VIEWER, {"status": "published", "public": True})
must([200, 201], "POST", f"/svc/recordings/{wave}/duplicate", VIEWER2)
must([200, 201], "POST", f"/svc/recordings/{DEMO_RECORDING}/duplicate", MEMBER)
play = must([200, 201], "POST", f"/svc/recordings/{wave}/play")["play_id"]
must([200], "PATCH", f"/svc/recordings/{wave}/play/{play}", None,
     {"duration_played": 3000, "completed": True})
play = must([200, 201], "POST", f"/svc/recordings/{DEMO_RECORDING}/play", VIEWER2)["play_id"]
must([200], "PATCH", f"/svc/recordings/{DEMO_RECORDING}/play/{play}", VIEWER2,
     {"duration_played": 1200, "completed": False})
draft = data_id(must([200, 201], "POST", "/svc/recordings", VIEWER,
                     dict(recording, title="Fixture Draft")))
must([200, 204], "DELETE", f"/svc/recordings/{draft}", VIEWER)

# Likes (one taken back) and video plays.
for token, n in [(VIEWER, 1), (VIEWER, 2), (VIEWER2, 1), (MEMBER, 3)] + ([(reader, 1)] if reader else []):
    must([200, 201], "POST", f"/svc/videos/{VIDEO % n}/like", token)
must([200, 204], "DELETE", f"/svc/videos/{VIDEO % 2}/like", VIEWER)
play = must([200, 201], "POST", f"/svc/videos/{VIDEO % 1}/play", None, {"session_id": "fixture-s1"})["play_id"]
must([200], "PATCH", f"/svc/videos/{VIDEO % 1}/play/{play}", None, {"duration_watched": 42, "completed": True})
must([200, 201], "POST", f"/svc/videos/{VIDEO % 2}/play", VIEWER, {"session_id": "fixture-s2"})

# Comments.
must([200, 204], "POST", "/items/platform_comments", VIEWER2,
     {"collection": "recordings", "item": wave, "comment": "Lovely build-up."})
status, _ = call("POST", "/comments", MEMBER,
                 {"collection": "recordings", "item": wave, "comment": "Saved it."})
if has_route(status) and status != 200:
    sys.exit(f"POST /comments: {status}")

# An uploaded file.
boundary = "fixture-boundary"
form = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nFixture dot\r\n"
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"dot.png\"\r\n"
        f"Content-Type: image/png\r\n\r\n").encode() + png() + f"\r\n--{boundary}--\r\n".encode()
status, answer = call("POST", "/files", ADMIN, raw=form,
                      content_type=f"multipart/form-data; boundary={boundary}")
if has_route(status) and status != 200:
    sys.exit(f"POST /files: {status} {answer}")

# What the gamification answers now (points and achievements followed).
must([200], "GET", "/svc/gamification/leaderboard?limit=10")

# The credentials this release accepts.
tokens = [t for t in [ADMIN, VIEWER, VIEWER2, MODEL, MEMBER]
          if call("GET", "/svc/recordings", t)[0] == 200]
passwords = []
for email, password in [("admin@example.com", "fixture-admin-password"),
                        ("victor@demo.local", "demo-password"),
                        ("wendy@demo.local", "demo-password"),
                        ("reader@fixture.local", "fixture-password")]:
    if call("POST", "/auth/login", None, {"email": email, "password": password})[0] == 200:
        passwords.append({"email": email, "password": password})
with open(OUT, "w") as f:
    json.dump({"tokens": tokens, "passwords": passwords}, f, indent=2)
    f.write("\n")
