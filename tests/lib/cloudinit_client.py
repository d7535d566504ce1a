#!/usr/bin/python3
"""Debian's real cloud-init (22.4) as an HTTP client of the imds-server.

Run with /usr/bin/python3 (the only interpreter that can import cloudinit):
  /usr/bin/python3 tests/lib/cloudinit_client.py \
      --serial 'ds=nocloud;s=http://127.0.0.1:PORT/v1/;dsmode=net' [--mode datasource|read_seeded|both] \
      [--expect-userdata-file F] [--expect-vendordata-file F] [--verbose]
Prints one JSON object on stdout; exit 0 = cloud-init accepted the data, 1 = not, 2 = usage.

What cloud-init 22.4 does, read in /usr/lib/python3/dist-packages/cloudinit/:
* Fetch path. sources/DataSourceNoCloud.py:70 parses dmi.read_dmi_data("system-serial-number")
  with the kernel-cmdline parser (load_cmdline_data :274, parse_cmdline_data :294; `s` = seedfrom).
  The local stage's DataSourceNoCloud only accepts seedfrom "/" or "file://" (:34) and declines
  (:163-169); the network stage's DataSourceNoCloudNet (:352) calls
  util.read_seeded(seedfrom, timeout=None) (:173) -> util.py:977: meta-data, user-data,
  vendor-data IN THAT ORDER, retries=10 (its default), no timeout.
* network-config is NEVER requested over HTTP in 22.4: read_seeded builds only the three URLs
  above (util.py:983-985) and NoCloud sets network-config only from seed dirs/disks (:89-99,
  _merge_new_seed :342). network_config below is therefore null unless meta-data carries ENI
  `network-interfaces`. (Later upstream read_seeded fetches network-config; Ubuntu patched that
  out again on stable series.)
* Non-2xx: url_helper.readurl (url_helper.py:193) makes retries+1 = 11 attempts (:263-264),
  time.sleep(sec_between=1) between them (:359-368), raise_for_status -> >=400 retried (:319);
  then raises UrlError (:370): ~10 s per failing file. meta-data/user-data errors propagate
  out of read_seeded (util.py:987-999) and out of get_data (DataSourceNoCloud.py:171-173 "let
  them raise"); find_source (sources/__init__.py:951) logs it and the datasource is NOT found. A
  failing vendor-data is swallowed after its 11 tries (util.py:1002-1012): vendordata_raw None.
  Connection errors are retried the same way; only SSL errors stop at once (:350-353).
* Empty 200: ok() is 200..299 (url_helper.py:129); user-data/vendor-data become b"" (no error);
  empty meta-data -> load_yaml default {} (util.py:992, :948) and instance-id falls back to
  "nocloud" (DataSourceNoCloud.py:53-56, merged last at :185).
* dsmode: "ds=nocloud" implies dsmode "local" unless the serial says dsmode= (:274-285);
  serial values override served meta-data (:176-178), so a served `dsmode:` cannot fix it.
  With dsmode=local the network stage fetches everything, then stops at cmd/main.py:388
  ("[net] Exiting. datasource ... in local mode") before init.update()/consume_data: user-data
  is never applied. So `dsmode=net` IS required in 22.4 -> see network_stage_proceeds.
Harness choices (each justified above or inline): DMI and /proc/cmdline are faked, the cidata
blkid/mount scan is off (fs_label: null), proxies are unset, all paths live in a temp dir.
"""
import argparse
import base64
import hashlib
import importlib
import json
import os
import shutil
import sys
import tempfile
import time

REQUESTS = []  # one entry per HTTP attempt, in order


def blob(data, prefix):
    """base64 + sha256 + length of a bytes-ish value (None stays null)."""
    if data is None:
        return {prefix + "_b64": None, prefix + "_sha256": None, prefix + "_len": None}
    if isinstance(data, str):
        data = data.encode("utf-8")
    return {prefix + "_b64": base64.b64encode(data).decode(),
            prefix + "_sha256": hashlib.sha256(data).hexdigest(), prefix + "_len": len(data)}


def processed(ud_proc_msg, raw, prefix):
    """What cloud-init made of the raw bytes: gunzipped blob and the MIME parts it will handle."""
    from cloudinit import util
    out = {}
    if raw is None:
        return out
    dec = util.decomp_gzip(raw, quiet=True, decode=False)  # as user_data.convert_string:383
    out[prefix + "_gzip"] = dec != raw
    out[prefix + "_decompressed_sha256"] = hashlib.sha256(dec).hexdigest()
    out[prefix + "_decompressed_len"] = len(dec)
    try:
        parts = []
        for p in ud_proc_msg().walk():
            if p.is_multipart():
                continue
            payload = p.get_payload(decode=True) or b""
            parts.append({"content_type": p.get_content_type(), "filename": p.get_filename(),
                          "len": len(payload), "sha256": hashlib.sha256(payload).hexdigest()})
        out[prefix + "_parts"] = parts
    except Exception as e:  # processing is informative only; the fetch result stands
        out[prefix + "_process_error"] = "%s: %s" % (type(e).__name__, e)
    return out


def instrument_http():
    """readurl() loops over attempts itself (url_helper.py:288) and only returns/raises at the
    end, so wrapping it would hide retries; its every attempt is one requests.Session.request
    (url_helper.py:317), which is wrapped here instead."""
    import requests
    orig = requests.Session.request

    def traced(self, method, url, *args, **kwargs):
        rec = {"method": method, "url": url, "status": None, "t": time.monotonic()}
        REQUESTS.append(rec)
        try:
            r = orig(self, method, url, *args, **kwargs)
        except Exception as e:
            rec["error"] = "%s: %s" % (type(e).__name__, e)
            raise
        rec["status"], rec["bytes"] = r.status_code, len(r.content)  # after requests' decoding
        if r.headers.get("Content-Encoding"):  # requests sends Accept-Encoding: gzip, deflate and
            # transparently decodes, so cloud-init never sees the bytes as served
            rec["content_encoding"] = r.headers["Content-Encoding"]
        return r
    requests.Session.request = traced


def http_log(first, t0):
    """Attempts since index `first`; t = seconds since the fetch began (shows the retry sleeps)."""
    reqs = REQUESTS[first:]
    seen, retries = set(), 0
    for r in reqs:
        r["t"] = round(r["t"] - t0, 3)
        retries += r["url"] in seen
        seen.add(r["url"])
    return {"requests": reqs, "retries": retries}


def run_datasource(serial, tmp):
    from unittest import mock
    from cloudinit import distros, dmi, helpers, util
    from cloudinit.event import EventType
    from cloudinit.sources import DataSourceNoCloud as NC
    paths = helpers.Paths({"cloud_dir": os.path.join(tmp, "cloud"),
                           "run_dir": os.path.join(tmp, "run"),
                           "templates_dir": os.path.join(tmp, "templates")})
    sys_cfg = util.mergemanydict([{
        # fs_label null: skip the blkid scan / mount of a "cidata" disk (DataSourceNoCloud.py:120)
        "datasource": {"NoCloud": {"fs_label": None}},
        "system_info": {"distro": "debian", "paths": paths.cfgs}}, util.get_builtin_cfg()])
    distro = distros.fetch("debian")("debian", sys_cfg["system_info"], paths)

    def fake_dmi(key):
        return serial if key == "system-serial-number" else None

    with mock.patch.object(dmi, "read_dmi_data", side_effect=fake_dmi):
        # Local stage first, as at boot: it must decline an http seedfrom without any request.
        local_claims = NC.DataSourceNoCloud(sys_cfg, distro, paths).get_data()
        first = len(REQUESTS)
        ds = NC.DataSourceNoCloudNet(sys_cfg, distro, paths)
        res = {"ok": False, "error": None, "local_stage_claims": bool(local_claims)}
        t0 = time.monotonic()
        try:
            # what sources.find_source() calls (sources/__init__.py:946); find_source itself
            # would swallow the exception, which we want to report instead
            res["ok"] = bool(ds.update_metadata_if_supported([EventType.BOOT_NEW_INSTANCE]))
        except Exception as e:
            res["error"] = "%s: %s" % (type(e).__name__, e)
        res["elapsed_s"] = round(time.monotonic() - t0, 4)
    res.update(http_log(first, t0))
    if not res["ok"]:
        return res, None, None, None
    res.update({
        "seed": ds.seed, "dsmode": ds.dsmode,
        # cmd/main.py:388: the network stage stops before applying user-data unless dsmode=net
        "network_stage_proceeds": ds.dsmode == "net",
        "instance_id": ds.get_instance_id(),
        # metadata_only: without local-hostname a boot keeps the current hostname; report null.
        # cloud-init cuts local-hostname at the first dot (sources/__init__.py:771-777)
        "local_hostname": ds.get_hostname(metadata_only=True).hostname,
        "fqdn": ds.get_hostname(fqdn=True, metadata_only=True).hostname,
        "metadata": ds.metadata,
        # what cc_ssh installs for the default user (sources/__init__.py normalize_pubkey_data)
        "public_keys": ds.get_public_ssh_keys(),
        "network_config": ds.network_config,
        "instance_data_written": os.path.exists(paths.get_runpath("instance_data")),
    })
    return res, ds.userdata_raw, ds.vendordata_raw, (ds.get_userdata, ds.get_vendordata)


def run_read_seeded(base):
    from cloudinit import util
    first, t0 = len(REQUESTS), time.monotonic()
    res = {"ok": False, "error": None, "base": base}
    md = ud = vd = None
    try:
        # exactly the datasource's call (DataSourceNoCloud.py:173): retries=10 default, no timeout
        md, ud, vd = util.read_seeded(base, timeout=None)
        res["ok"] = md is not None and ud is not None
    except Exception as e:
        res["error"] = "%s: %s" % (type(e).__name__, e)
    res["elapsed_s"] = round(time.monotonic() - t0, 4)
    res.update(http_log(first, t0))
    res.update({"metadata": md, "network_config": None, "dsmode": None,
                "instance_id": (md or {}).get("instance-id"),
                "local_hostname": (md or {}).get("local-hostname")})  # raw, not cut at a dot
    return res, ud, vd, None


def finish(res, ud, vd, getters, args):
    """Add the user-data / vendor-data blobs and the optional byte-exact expectations."""
    from cloudinit import helpers, user_data
    res.update(blob(ud, "userdata"))
    res.update(blob(vd, "vendordata"))
    if getters is None:  # read_seeded mode: run the same processor the datasource uses
        proc = user_data.UserDataProcessor(helpers.Paths({"cloud_dir": "/nonexistent"}))
        getters = (lambda: proc.process(ud), lambda: proc.process(vd))
    if res["ok"]:
        res.update(processed(getters[0], ud, "userdata"))
        res.update(processed(getters[1], vd, "vendordata"))
    for name, f, data in (("userdata", args.expect_userdata_file, ud),
                          ("vendordata", args.expect_vendordata_file, vd)):
        if f:
            with open(f, "rb") as fh:
                res[name + "_matches"] = data is not None and fh.read() == data
            if not res[name + "_matches"]:
                res["ok"] = False
                res["error"] = res["error"] or "%s differs from %s" % (name, f)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--serial", help="DMI system-serial-number, e.g. ds=nocloud;s=URL;dsmode=net")
    ap.add_argument("--url", help="read_seeded base URL (default: the serial's s=)")
    ap.add_argument("--mode", choices=("datasource", "read_seeded", "both"), default="datasource")
    ap.add_argument("--expect-userdata-file")
    ap.add_argument("--expect-vendordata-file")
    ap.add_argument("--verbose", action="store_true", help="cloud-init DEBUG log on stderr")
    args = ap.parse_args()  # exits 2 on usage errors
    if not args.serial and (args.mode != "read_seeded" or not args.url):
        ap.error("--serial is required (or --url with --mode read_seeded)")
    for f in (args.expect_userdata_file, args.expect_vendordata_file):
        if f and not os.path.isfile(f):
            ap.error("no such file: %s" % f)

    # A boot has no proxy; a host/CI proxy must not be asked for 127.0.0.1 or 169.254.169.254.
    for k in [k for k in os.environ if k.lower() in ("http_proxy", "https_proxy", "all_proxy")]:
        del os.environ[k]
    # util.get_cmdline() honours this (util.py:1566): the host's /proc/cmdline (or /proc/1/cmdline
    # in a container) must not add a ds= of its own to the one the DMI serial carries.
    os.environ["DEBUG_PROC_CMDLINE"] = ""
    import logging
    logging.basicConfig(stream=sys.stderr, level=logging.DEBUG if args.verbose else logging.WARNING)

    t0 = time.monotonic()
    try:
        for m in ("requests", "cloudinit.distros.debian", "cloudinit.user_data"):
            importlib.import_module(m)  # timed here, used later
        from cloudinit.sources import DataSourceNoCloud as NC
    except ImportError as e:
        ap.error("cannot import cloudinit (%s): run with /usr/bin/python3, not %s"
                 % (e, sys.executable))
    instrument_http()
    import_s = round(time.monotonic() - t0, 4)

    base = args.url
    if not base and args.mode != "datasource":
        fill = {}
        if NC.load_cmdline_data(fill, args.serial):  # cloud-init's own serial parser
            base = fill.get("seedfrom")
        if not base:
            ap.error("the serial carries no ds=nocloud;s=URL; pass --url")

    tmp = tempfile.mkdtemp(prefix="cloudinit-client-")
    try:
        if args.mode == "read_seeded":
            res = finish(*run_read_seeded(base), args)
        else:
            res = finish(*run_datasource(args.serial, tmp), args)
            if args.mode == "both":
                rs = finish(*run_read_seeded(base), args)
                res["read_seeded"] = rs
                res["consistent"] = all(res.get(k) == rs.get(k) for k in (
                    "userdata_sha256", "vendordata_sha256", "instance_id"))
                res["ok"] = res["ok"] and rs["ok"] and res["consistent"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = {"ok": res.pop("ok"), "error": res.pop("error"), "mode": args.mode,
           "cloudinit_version": __import__("cloudinit.version").version.version_string(),
           "import_s": import_s}
    out.update(res)
    json.dump(out, sys.stdout, default=str, sort_keys=False)
    sys.stdout.write("\n")
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
