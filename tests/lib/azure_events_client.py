"""Debian resource-agents' azure-events-az, the Azure Scheduled Events agent, against the sidecar.

Run with /usr/bin/python3:
  azure_events_client.py --url http://127.0.0.1:PORT [--ack] [--agent PATH]
The agent (/usr/lib/ocf/resource.d/heartbeat/azure-events-az) is loaded as a module and its
own code is driven, without a Pacemaker cluster: azHelper.getInstanceInfo() (GET
/metadata/instance, compute.name: the agent's own name), azHelper.pullScheduledEvents() (GET
/metadata/scheduledevents?api-version=2019-08-01, header Metadata: true), Node.separateEvents()
(the agent's match: EventType among its eventTypes, which the agent allows to be Freeze,
Reboot, Redeploy, and its name in Resources), and with --ack azHelper.forceEvents() on its
local events (POST {"StartRequests":[{"EventId":...}]}), then a second pull.  metadata_host is
the one setting changed (the agent hard-codes http://169.254.169.254/metadata).
Prints one JSON line: {"name", "incarnation", "events", "local", "after"}.
"""
import argparse
import importlib.machinery
import importlib.util
import json
import os
import sys

AGENT = "/usr/lib/ocf/resource.d/heartbeat/azure-events-az"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--ack", action="store_true")
    ap.add_argument("--agent", default=AGENT)
    args = ap.parse_args()
    os.environ.setdefault("OCF_ROOT", "/usr/lib/ocf")
    loader = importlib.machinery.SourceFileLoader("azure_events_az", args.agent)
    spec = importlib.util.spec_from_loader("azure_events_az", loader)
    az = importlib.util.module_from_spec(spec)
    loader.exec_module(az)
    az.azHelper.metadata_host = args.url.rstrip("/") + "/metadata"

    info = az.azHelper.getInstanceInfo()
    events = az.azHelper.pullScheduledEvents()
    # A Node as the agent builds it, less the Pacemaker attributes its constructor writes.
    node = az.Node.__new__(az.Node)
    node.azName = info.name
    node.raOwner = type("RA", (), {"relevantEventTypes": {"Freeze", "Reboot", "Redeploy"}})()
    local, _ = node.separateEvents(events.Events)
    after = None
    if args.ack and local:
        az.azHelper.forceEvents([e.EventId for e in local])
        after = [dict(e) for e in az.azHelper.pullScheduledEvents().Events]
    json.dump({"name": info.name, "incarnation": events.DocumentIncarnation,
               "events": [dict(e) for e in events.Events], "local": [dict(e) for e in local],
               "after": after}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
