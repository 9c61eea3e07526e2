"""The deployment files in Deploy/, checked without a container engine or a cluster.

1. Every Kubernetes manifest the kustomization lists (and it lists every manifest in Deploy/kubernetes) passes
   `kubernetes-validate --strict` for each Kubernetes version in KUBERNETES_VERSIONS with no error and no
   warning (the tool exits 0 on warnings, such as an unknown kind, so its output is read too).
2. The kinds are exactly the expected set, one each.
3. The Deployment: three replicas, /livez and /readyz probes, requests and limits, the restrictive security
   context, keys from a Secret mounted read-only with mode 0440 and runAsGroup equal to fsGroup, PGPASSWORD from
   a Secret. The ConfigMap's configuration: no password, TLS verified, every file it names mounted or in the image,
   and `offer-signer config check` accepts it (with local files and `memory` for the database).
   The Service, PodDisruptionBudget and NetworkPolicy select the Deployment's pods and say what docs/operations.md says.
   The Ingress (ingress-nginx) serves /v1 and the probes over TLS from a Secret, never /metrics, with the service's
   64 KiB body limit and no retries, and the NetworkPolicy admits its controller.
4. The Containerfile: built with --static-swift-stdlib, run as 10001 on debian:bookworm-slim, and its runtime
   stage installs the Debian package of every shared library the built binary links (readelf for the libraries
   it needs, ldd for where they resolve, dpkg -S for their packages), bar a short list the base image has.
5. Crash reports: the systemd unit, the Containerfile's runtime stage and the Deployment's container set
   SWIFT_BACKTRACE=enable=no (the Swift runtime's crash report prints registers and the memory around them to the
   logs), and the unit sets LimitCORE=0; the binary warns at start without the setting and not with it.

Each check is a function returning its problems; the tests run it on the real files (no problem) and on a copy
with one thing broken (that problem), so each check is shown able to fail.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from support import REPO_ROOT, binary, generate_key, run_cli

KUBERNETES = REPO_ROOT / "Deploy" / "kubernetes"
CONTAINERFILE = REPO_ROOT / "Deploy" / "container" / "Containerfile"
# The oldest Kubernetes release still commonly run, and the newest whose schemas kubernetes-validate 1.37.0 bundles.
KUBERNETES_VERSIONS = ["1.30.0", "1.37.0"]
EXPECTED_KINDS = ["ConfigMap", "Deployment", "Ingress", "NetworkPolicy", "PodDisruptionBudget", "Service"]
# The service's body limit (HTTPServerLimits.maxBodyBytes), which the Ingress must match.
SERVICE_MAX_BODY = 64 * 1024
INGRESS_NGINX = "nginx.ingress.kubernetes.io/"
# What the Ingress routes, (path, pathType): the API (Apple's routes under /v1/apple/ included) and the probes.
INGRESS_ROUTES = [("/v1", "Prefix"), ("/livez", "Exact"), ("/readyz", "Exact")]
# Packages every debian:bookworm-slim image already has (glibc, the GCC runtime, the C++ library apt uses, zlib).
BASE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6", "zlib1g"}
# Libraries of the Swift toolchain, in the binary itself when it is built with --static-swift-stdlib.
SWIFT_RUNTIME = re.compile(r"^lib(swift\w*|_?swift_\w+|dispatch|BlocksRuntime|Foundation\w*)\.so")
SERVICE_USER = 10001
SYSTEMD_UNIT = REPO_ROOT / "Deploy" / "systemd" / "offer-signer.service"
# The one environment variable with a literal value: it holds no secret.
BACKTRACE_SETTING = ("SWIFT_BACKTRACE", "enable=no")


# -- the files ------------------------------------------------------------------------------------------------------


def manifest_paths() -> list[Path]:
    kustomization = yaml.safe_load((KUBERNETES / "kustomization.yaml").read_text())
    return [KUBERNETES / name for name in kustomization["resources"]]


def load_documents(paths: list[Path]) -> list[dict[str, Any]]:
    return [doc for path in paths for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def one(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [doc for doc in documents if doc.get("kind") == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


@pytest.fixture(scope="module")
def documents() -> list[dict[str, Any]]:
    return load_documents(manifest_paths())


@pytest.fixture(scope="module")
def containerfile() -> str:
    return CONTAINERFILE.read_text()


# -- 1. kubernetes-validate -----------------------------------------------------------------------------------------


def validation_problems(paths: list[Path], version: str) -> list[str]:
    tool = Path(sys.executable).parent / "kubernetes-validate"
    result = subprocess.run(
        [str(tool), "--strict", "--kubernetes-version", version, *map(str, paths)],
        capture_output=True, text=True, timeout=120,
    )
    lines = (result.stdout + result.stderr).splitlines()
    problems = [line for line in lines if not line.startswith("INFO ") and line.strip()]
    if result.returncode != 0 and not problems:
        problems.append(f"kubernetes-validate exited {result.returncode}")
    passed = [line for line in lines if line.startswith("INFO ") and " passed " in line]
    if len(passed) < len(paths):
        problems.append(f"only {len(passed)} of {len(paths)} files reported as passed")
    return problems


def test_the_kustomization_lists_every_manifest_in_the_folder():
    listed = {path.name for path in manifest_paths()}
    present = {path.name for path in KUBERNETES.glob("*.y*ml")} - {"kustomization.yaml"}
    assert listed == present


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_manifests_validate_strictly(version: str):
    assert validation_problems(manifest_paths(), version) == []


def test_validation_reports_unknown_fields_and_kinds(tmp_path: Path):
    deployment = yaml.safe_load((KUBERNETES / "deployment.yaml").read_text())
    deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFS"] = True
    broken = tmp_path / "deployment.yaml"
    broken.write_text(yaml.safe_dump(deployment))
    problems = validation_problems([broken], KUBERNETES_VERSIONS[0])
    assert any(line.startswith("ERROR") and "readOnlyRootFS" in line for line in problems), problems
    # An unknown kind is only a warning, with exit status 0: it must count as a problem all the same.
    unknown = validation_problems([KUBERNETES / "kustomization.yaml"], KUBERNETES_VERSIONS[0])
    assert any(line.startswith("WARN") for line in unknown), unknown


# -- 2. kinds -------------------------------------------------------------------------------------------------------


def kind_problems(documents: list[dict[str, Any]]) -> list[str]:
    kinds = sorted(doc.get("kind", "?") for doc in documents)
    return [] if kinds == EXPECTED_KINDS else [f"kinds are {kinds}, expected {EXPECTED_KINDS}"]


def test_the_kinds_are_exactly_the_expected_ones(documents):
    assert kind_problems(documents) == []
    assert kind_problems([*documents, {"kind": "Kustomization"}]) != []
    assert kind_problems([doc for doc in documents if doc["kind"] != "NetworkPolicy"]) != []


# -- 3. what the manifests say ----------------------------------------------------------------------------------------


def deployment_problems(deployment: dict[str, Any]) -> list[str]:
    problems: list[str] = []

    def expect(condition: bool, message: str) -> None:
        if not condition:
            problems.append(message)

    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    expect(spec.get("replicas") == 3, "replicas is not 3")
    expect(pod.get("automountServiceAccountToken") is False, "the service account token is mounted")
    pod_security = pod.get("securityContext", {})
    expect(pod_security.get("runAsNonRoot") is True, "pod: runAsNonRoot is not true")
    expect(pod_security.get("runAsUser") == SERVICE_USER, "pod: runAsUser is not 10001")
    expect(pod_security.get("runAsGroup") == SERVICE_USER, "pod: runAsGroup is not 10001")
    # 0440 key files are accepted only when their group (fsGroup) is the process's own (runAsGroup).
    expect(pod_security.get("fsGroup") == pod_security.get("runAsGroup"), "pod: fsGroup is not runAsGroup")
    expect(pod_security.get("seccompProfile", {}).get("type") == "RuntimeDefault", "pod: seccomp not RuntimeDefault")
    containers = pod["containers"]
    expect(len(containers) == 1, "not one container")
    container = containers[0]
    security = container.get("securityContext", {})
    expect(security.get("runAsNonRoot") is True, "container: runAsNonRoot is not true")
    expect(security.get("readOnlyRootFilesystem") is True, "container: root filesystem is writable")
    expect(security.get("allowPrivilegeEscalation") is False, "container: privilege escalation allowed")
    expect(security.get("privileged", False) is False, "container: privileged")
    expect(security.get("capabilities", {}).get("drop") == ["ALL"], "container: capabilities not all dropped")
    expect(not security.get("capabilities", {}).get("add"), "container: capabilities added")
    expect(security.get("seccompProfile", {}).get("type") == "RuntimeDefault", "container: seccomp not RuntimeDefault")

    ports = {port.get("name"): port["containerPort"] for port in container.get("ports", [])}
    expect(ports == {"http": 8080}, f"container ports are {ports}, expected http: 8080")
    for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
        get = container.get(probe, {}).get("httpGet", {})
        expect(get.get("path") == path and get.get("port") in ("http", 8080), f"{probe} is not GET {path} on 8080")
    resources = container.get("resources", {})
    for bound in ("requests", "limits"):
        expect(set(resources.get(bound, {})) >= {"cpu", "memory"}, f"resources.{bound} lacks cpu or memory")

    env = {item["name"]: item for item in container.get("env", [])}
    password = env.get("PGPASSWORD", {}).get("valueFrom", {}).get("secretKeyRef", {})
    expect(bool(password.get("name")) and bool(password.get("key")), "PGPASSWORD does not come from a Secret")
    expect(all("value" not in item for name, item in env.items() if name != BACKTRACE_SETTING[0]),
           "an environment variable has a literal value")

    volumes = {volume["name"]: volume for volume in pod.get("volumes", [])}
    mounts = {mount["name"]: mount for mount in container.get("volumeMounts", [])}
    keys = volumes.get("keys", {}).get("secret", {})
    expect(bool(keys.get("secretName")), "the keys volume is not a Secret")
    expect(keys.get("defaultMode") == 0o440, "the keys Secret's defaultMode is not 0440")
    for name, volume in volumes.items():
        if "secret" in volume or "configMap" in volume:
            expect(mounts.get(name, {}).get("readOnly") is True, f"volume {name} is not mounted read-only")
            expect(volume.get("secret", volume.get("configMap", {})).get("defaultMode", 0o440) & 0o007 == 0,
                   f"volume {name} is readable by others")
    return problems


def mounted_paths(deployment: dict[str, Any]) -> dict[str, str]:
    """Mount path to the kind of volume mounted there."""
    pod = deployment["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    return {
        mount["mountPath"]: next(kind for kind in ("secret", "configMap", "emptyDir") if kind in volumes[mount["name"]])
        for mount in pod["containers"][0]["volumeMounts"]
    }


def image_paths(containerfile: str) -> set[str]:
    """Files the runtime stage copies into the image."""
    return {line.split()[-1] for line in runtime_stage(containerfile).splitlines() if line.startswith("COPY ")}


def configuration_problems(configmap: dict[str, Any], deployment: dict[str, Any], containerfile: str) -> list[str]:
    problems: list[str] = []
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    config_path = container["args"][container["args"].index("--config") + 1]
    mounts = mounted_paths(deployment)
    if mounts.get(config_path) != "configMap":
        problems.append(f"{config_path} is not mounted from the ConfigMap")
    text = configmap["data"]["offer-signer.json"]
    if re.search(r"pass(word)?", text, re.IGNORECASE):
        problems.append("the ConfigMap mentions a password")
    config = json.loads(text)
    if config["listen"].get("host") != "0.0.0.0" or config["listen"].get("port") != 8080:
        problems.append("the service does not listen on 0.0.0.0:8080")
    dsn = urlsplit(config["storage"])
    query = {name: values[0] for name, values in parse_qs(dsn.query).items()}
    if dsn.scheme != "postgresql" or dsn.password is not None:
        problems.append("storage is not a PostgreSQL DSN without a password")
    if query.get("sslmode") != "verify-full":
        problems.append("sslmode is not verify-full")
    if not all(name in query for name in ("keepalives_idle", "keepalives_interval", "keepalives_count")):
        problems.append("the DSN sets no TCP keepalives")

    def in_secret(path: str) -> bool:
        return any(path.startswith(mount + "/") and kind == "secret" for mount, kind in mounts.items())

    files = [query.get("sslrootcert", "")]
    files += [key["privateKeyFile"] for app in config["apps"] for key in app["keys"]]
    problems += [f"{path} is not in a mounted Secret" for path in files if not in_secret(path)]
    images = image_paths(containerfile)
    problems += [f"{root} is not in the image" for root in config["trust"]["rootCertificates"] if root not in images]
    return problems


def test_the_deployment_is_restricted_and_probed(documents):
    deployment = one(documents, "Deployment")
    assert deployment_problems(deployment) == []
    for path, value, problem in [
        (["spec", "replicas"], 2, "replicas is not 3"),
        (["spec", "template", "spec", "securityContext", "fsGroup"], 2000, "pod: fsGroup is not runAsGroup"),
        (["spec", "template", "spec", "containers", 0, "securityContext", "readOnlyRootFilesystem"], False,
         "container: root filesystem is writable"),
        (["spec", "template", "spec", "containers", 0, "securityContext", "capabilities", "drop"], ["NET_RAW"],
         "container: capabilities not all dropped"),
        (["spec", "template", "spec", "containers", 0, "readinessProbe", "httpGet", "path"], "/livez",
         "readinessProbe is not GET /readyz on 8080"),
        (["spec", "template", "spec", "volumes", 1, "secret", "defaultMode"], 0o444,
         "the keys Secret's defaultMode is not 0440"),
        (["spec", "template", "spec", "containers", 0, "env", 0], {"name": "PGPASSWORD", "value": "x"},
         "PGPASSWORD does not come from a Secret"),
    ]:
        broken = copy.deepcopy(deployment)
        target = broken
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value
        assert problem in deployment_problems(broken), path


def test_the_configuration_holds_no_password_and_names_only_mounted_files(documents, containerfile):
    configmap, deployment = one(documents, "ConfigMap"), one(documents, "Deployment")
    assert configuration_problems(configmap, deployment, containerfile) == []
    broken = copy.deepcopy(configmap)
    config = json.loads(broken["data"]["offer-signer.json"])
    storage = config["storage"].replace("offer_signer@", "offer_signer:secret@")
    config["storage"] = storage.replace("verify-full", "require")
    config["apps"][0]["keys"][0]["privateKeyFile"] = "/tmp/key.p8"
    broken["data"]["offer-signer.json"] = json.dumps(config)
    problems = configuration_problems(broken, deployment, containerfile)
    assert "storage is not a PostgreSQL DSN without a password" in problems
    assert "sslmode is not verify-full" in problems
    assert "/tmp/key.p8 is not in a mounted Secret" in problems
    assert any("not in the image" in problem for problem in configuration_problems(
        configmap, deployment, containerfile.replace("AppleRootCA-G3.cer /usr", "AppleRootCA-G3.cer /opt")))


def test_the_configuration_passes_config_check(documents, tmp_path: Path):
    """The ConfigMap's configuration as the binary reads it, with its files and database replaced by local ones."""
    config = json.loads(one(documents, "ConfigMap")["data"]["offer-signer.json"])
    assert config["storage"].startswith("postgresql://")
    config["storage"] = "memory"
    config["trust"]["rootCertificates"] = [str(REPO_ROOT / "Keys" / "apple" / "AppleRootCA-G3.cer")]
    for app in config["apps"]:
        for key in app["keys"]:
            key["privateKeyFile"] = str(generate_key(tmp_path, key["keyId"]))
    path = tmp_path / "offer-signer.json"
    path.write_text(json.dumps(config))
    result = run_cli("config", "check", "--config", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    config["listen"]["hots"] = "0.0.0.0"
    path.write_text(json.dumps(config))
    assert run_cli("config", "check", "--config", str(path)).returncode != 0


def companion_problems(documents: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    labels = one(documents, "Deployment")["spec"]["template"]["metadata"]["labels"]
    service = one(documents, "Service")["spec"]
    if not service["selector"].items() <= labels.items():
        problems.append("the Service does not select the pods")
    if [port.get("targetPort") for port in service["ports"]] not in (["http"], [8080]):
        problems.append("the Service does not target port 8080")
    budget = one(documents, "PodDisruptionBudget")["spec"]
    if budget.get("minAvailable") != 2 or budget["selector"]["matchLabels"] != one(documents, "Deployment")[
            "spec"]["selector"]["matchLabels"]:
        problems.append("the PodDisruptionBudget does not keep 2 of the pods")
    policy = one(documents, "NetworkPolicy")["spec"]
    if not policy["podSelector"]["matchLabels"].items() <= labels.items():
        problems.append("the NetworkPolicy does not select the pods")
    if sorted(policy.get("policyTypes", [])) != ["Egress", "Ingress"]:
        problems.append("the NetworkPolicy does not restrict both directions")
    ingress = policy.get("ingress", [])
    if not ingress or any(not rule.get("from") or [(p["protocol"], p["port"]) for p in rule.get("ports", [])]
                          != [("TCP", 8080)] for rule in ingress):
        problems.append("ingress is not only TCP 8080 from selected clients")
    egress_ports = sorted((port["protocol"], port["port"]) for rule in policy.get("egress", [])
                          for port in rule.get("ports", []))
    if egress_ports != [("TCP", 53), ("TCP", 5432), ("UDP", 53)]:
        problems.append(f"egress ports are {egress_ports}, expected DNS and PostgreSQL only")
    if any(not rule.get("ports") or not rule.get("to") for rule in policy.get("egress", [])):
        problems.append("an egress rule is open to every port or destination")
    return problems


def test_the_service_budget_and_network_policy_fit_the_deployment(documents):
    assert companion_problems(documents) == []
    for kind, change, problem in [
        ("PodDisruptionBudget", lambda spec: spec.update(minAvailable=1), "the PodDisruptionBudget does not keep 2"),
        ("NetworkPolicy", lambda spec: spec["ingress"][0].pop("from"), "ingress is not only TCP 8080"),
        ("NetworkPolicy", lambda spec: spec["egress"].append({"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}),
         "an egress rule is open"),
        ("NetworkPolicy", lambda spec: spec.update(policyTypes=["Ingress"]), "does not restrict both directions"),
        ("Service", lambda spec: spec.update(selector={"app": "other"}), "the Service does not select the pods"),
    ]:
        broken = copy.deepcopy(documents)
        change(one(broken, kind)["spec"])
        assert any(problem in found for found in companion_problems(broken)), problem


def nginx_size(text: str) -> int | None:
    """An nginx size (`64k`, `1m`, `65536`) in bytes."""
    match = re.fullmatch(r"(\d+)([kKmM]?)", text)
    if not match:
        return None
    return int(match.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[match.group(2).lower()]


def ingress_routes(path: str, path_type: str, request_path: str) -> bool:
    """Whether an Ingress path routes `request_path`: Exact as is, Prefix element by element."""
    if path_type == "Exact":
        return request_path == path
    rule, request = [part for part in path.split("/") if part], [part for part in request_path.split("/") if part]
    return request[:len(rule)] == rule


def ingress_problems(documents: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []

    def expect(condition: bool, message: str) -> None:
        if not condition:
            problems.append(message)

    spec = one(documents, "Ingress")["spec"]
    annotations = one(documents, "Ingress")["metadata"].get("annotations", {})
    expect(spec.get("ingressClassName") == "nginx", "the Ingress class is not nginx")
    tls = spec.get("tls", [])
    hosts = {rule.get("host") for rule in spec.get("rules", [])}
    expect(bool(tls) and all(entry.get("secretName") for entry in tls), "TLS does not come from a Secret")
    expect(None not in hosts and hosts <= {host for entry in tls for host in entry.get("hosts", [])},
           "a host is served without TLS")
    size = nginx_size(annotations.get(INGRESS_NGINX + "proxy-body-size", "1m"))
    expect(size == SERVICE_MAX_BODY, f"the body size limit is {size} bytes, not the service's {SERVICE_MAX_BODY}")
    expect(annotations.get(INGRESS_NGINX + "proxy-request-buffering", "on") == "on", "request bodies are streamed")
    expect(annotations.get(INGRESS_NGINX + "proxy-next-upstream") == "off"
           and annotations.get(INGRESS_NGINX + "proxy-next-upstream-tries") == "1", "the controller may retry")
    paths = [(path["path"], path["pathType"], path["backend"]) for rule in spec.get("rules", [])
             for path in rule.get("http", {}).get("paths", [])]
    routes = sorted((path, path_type) for path, path_type, _ in paths)
    expect(routes == sorted(INGRESS_ROUTES), f"the routes are {routes}, expected {sorted(INGRESS_ROUTES)}")
    for request in ("/metrics", "/metrics/"):
        expect(not any(ingress_routes(path, path_type, request) for path, path_type, _ in paths),
               f"{request} is routed")
    service = one(documents, "Service")
    ports = {key for port in service["spec"]["ports"] for key in (port.get("name"), port["port"]) if key is not None}
    for path, _, backend in paths:
        target = backend.get("service", {})
        port = target.get("port", {}).get("name", target.get("port", {}).get("number"))
        expect(target.get("name") == service["metadata"]["name"] and port in ports,
               f"{path} does not go to the Service's port")
    admitted = [peer for rule in one(documents, "NetworkPolicy")["spec"].get("ingress", [])
                for peer in rule.get("from", [])
                if peer.get("namespaceSelector", {}).get("matchLabels", {}).get("kubernetes.io/metadata.name")
                == "ingress-nginx"]
    expect(bool(admitted), "the NetworkPolicy does not admit the ingress controller")
    return problems


def test_the_ingress_serves_the_api_over_tls_without_metrics_or_retries(documents):
    assert ingress_problems(documents) == []
    annotation = INGRESS_NGINX
    for change, problem in [
        (lambda ingress: ingress["spec"].pop("tls"), "TLS does not come from a Secret"),
        (lambda ingress: ingress["spec"]["tls"][0]["hosts"].clear(), "a host is served without TLS"),
        (lambda ingress: ingress["metadata"]["annotations"].update({annotation + "proxy-body-size": "1m"}),
         "the body size limit is 1048576 bytes"),
        (lambda ingress: ingress["metadata"]["annotations"].pop(annotation + "proxy-body-size"),
         "the body size limit is 1048576 bytes"),
        (lambda ingress: ingress["metadata"]["annotations"].update({annotation + "proxy-next-upstream": "error"}),
         "the controller may retry"),
        (lambda ingress: ingress["metadata"]["annotations"].update({annotation + "proxy-request-buffering": "off"}),
         "request bodies are streamed"),
        (lambda ingress: ingress["spec"]["rules"][0]["http"]["paths"][0].update(path="/"), "/metrics is routed"),
        (lambda ingress: ingress["spec"]["rules"][0]["http"]["paths"][1].update(path="/metrics"),
         "/metrics is routed"),
        (lambda ingress: ingress["spec"]["rules"][0]["http"]["paths"][2]["backend"]["service"].update(name="x"),
         "/readyz does not go to the Service's port"),
        (lambda ingress: ingress["spec"].update(ingressClassName="traefik"), "the Ingress class is not nginx"),
    ]:
        broken = copy.deepcopy(documents)
        change(one(broken, "Ingress"))
        assert any(found.startswith(problem) for found in ingress_problems(broken)), problem
    broken = copy.deepcopy(documents)
    one(broken, "NetworkPolicy")["spec"]["ingress"].pop()
    assert "the NetworkPolicy does not admit the ingress controller" in ingress_problems(broken)


def test_ingress_paths_match_as_kubernetes_matches_them():
    assert ingress_routes("/v1", "Prefix", "/v1/apple/retention/com.example.app")
    assert ingress_routes("/v1", "Prefix", "/v1")
    assert not ingress_routes("/v1", "Prefix", "/v10/x")
    assert not ingress_routes("/v1", "Prefix", "/metrics")
    assert ingress_routes("/", "Prefix", "/metrics")
    assert ingress_routes("/livez", "Exact", "/livez")
    assert not ingress_routes("/livez", "Exact", "/livez/x")


# -- 4. the Containerfile against the binary ------------------------------------------------------------------------


def stages(containerfile: str) -> list[str]:
    """The stages' text, `FROM` line first, continuation lines joined."""
    joined = re.sub(r"\\\n\s*", " ", containerfile)
    lines = [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    found: list[list[str]] = []
    for line in lines:
        if line.startswith("FROM "):
            found.append([])
        if found:
            found[-1].append(line)
    return ["\n".join(stage) for stage in found]


def runtime_stage(containerfile: str) -> str:
    return stages(containerfile)[-1]


def installed_packages(stage: str) -> set[str]:
    packages: set[str] = set()
    for match in re.finditer(r"apt-get install ([^&;\n]*)", stage):
        packages |= {word for word in match.group(1).split() if not word.startswith("-")}
    return packages


def linked_libraries(path: str) -> tuple[set[str], set[str], set[str]]:
    """The Debian packages of the libraries the binary needs, the Swift runtime libraries it needs, and any
    library that resolves nowhere or to a file no package owns."""
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                        subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout)
    resolved = dict(re.findall(r"^\s*(\S+) => (\S+)", subprocess.run(
        ["ldd", path], capture_output=True, text=True, check=True).stdout, re.MULTILINE))
    packages: set[str] = set()
    swift: set[str] = set()
    unowned: set[str] = set()
    for name in needed:
        if name.startswith("ld-linux"):
            packages.add("libc6")  # the dynamic loader: ldd lists it by absolute path only
            continue
        if SWIFT_RUNTIME.match(name):
            swift.add(name)
            continue
        if name not in resolved or resolved[name] == "not":
            unowned.add(name)
            continue
        owner = subprocess.run(["dpkg", "-S", os.path.realpath(resolved[name])], capture_output=True, text=True)
        if owner.returncode != 0:
            owner = subprocess.run(["dpkg", "-S", resolved[name]], capture_output=True, text=True)
        if owner.returncode != 0:
            unowned.add(f"{name} ({resolved[name]})")
            continue
        packages.add(owner.stdout.split(":")[0].strip())
    return packages, swift, unowned


def image_problems(containerfile: str, linked: tuple[set[str], set[str], set[str]]) -> list[str]:
    packages, swift, unowned = linked
    problems = [f"{library} belongs to no Debian package" for library in sorted(unowned)]
    build, runtime = stages(containerfile)[0], runtime_stage(containerfile)
    installed = installed_packages(runtime)
    problems += [f"the runtime stage does not install {package}"
                 for package in sorted(packages - BASE_PACKAGES - installed)]
    problems += [f"the runtime stage installs a development package: {package}"
                 for package in sorted(installed) if package.endswith("-dev")]
    if swift and "--static-swift-stdlib" not in build:
        problems.append(f"the binary needs the Swift runtime ({', '.join(sorted(swift))}) but is not built with "
                        "--static-swift-stdlib")
    if not re.match(r"FROM (docker\.io/library/)?swift:6\.3-bookworm AS build\b", build):
        problems.append("the build stage is not swift:6.3-bookworm")
    if not runtime.startswith("FROM docker.io/library/debian:bookworm-slim") and not runtime.startswith(
            "FROM debian:bookworm-slim"):
        problems.append("the runtime stage is not debian:bookworm-slim")
    if not re.search(r"^USER 10001(:10001)?$", runtime, re.MULTILINE):
        problems.append("the runtime stage does not run as 10001")
    if 'ENTRYPOINT ["/usr/local/bin/offer-signer"]' not in runtime:
        problems.append("the entry point is not the binary")
    return problems


@pytest.fixture(scope="module")
def linked() -> tuple[set[str], set[str], set[str]]:
    return linked_libraries(binary())


def test_the_binary_links_the_libraries_expected(linked):
    packages, _, unowned = linked
    # The service's five C libraries: if one stops resolving, the mapping above is wrong, not the image.
    assert {"libssl3", "libmicrohttpd12", "libsqlite3-0", "libpq5", "libcurl4"} <= packages
    assert unowned == set()


def test_the_runtime_image_installs_a_package_for_every_linked_library(containerfile, linked):
    assert image_problems(containerfile, linked) == []
    without_libpq = containerfile.replace(" libpq5 ", " ")
    assert "the runtime stage does not install libpq5" in image_problems(without_libpq, linked)
    dynamic = containerfile.replace(" --static-swift-stdlib", "")
    packages, _, unowned = linked
    assert any("--static-swift-stdlib" in problem
               for problem in image_problems(dynamic, (packages, {"libswiftCore.so"}, unowned)))
    unknown = (packages, set(), {"libfoo.so.1"})
    assert "libfoo.so.1 belongs to no Debian package" in image_problems(containerfile, unknown)
    assert "the runtime stage does not run as 10001" in image_problems(containerfile.replace("USER 10001", "USER 0"),
                                                                       linked)


# -- 5. crash reports -------------------------------------------------------------------------------------------------


def crash_report_problems(unit: str, containerfile: str, deployment: dict[str, Any]) -> list[str]:
    name, value = BACKTRACE_SETTING
    problems: list[str] = []
    if f"Environment={name}={value}" not in [line.strip() for line in unit.splitlines()]:
        problems.append(f"the systemd unit does not set {name}={value}")
    if "LimitCORE=0" not in [line.strip() for line in unit.splitlines()]:
        problems.append("the systemd unit does not set LimitCORE=0")
    if not re.search(rf"^ENV {name}={value}$", runtime_stage(containerfile), re.MULTILINE):
        problems.append(f"the runtime image does not set {name}={value}")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = {item["name"]: item.get("value") for item in container.get("env", [])}
    if env.get(name) != value:
        problems.append(f"the Deployment's container does not set {name}={value}")
    return problems


def test_crash_reports_are_off_in_every_deployment(documents, containerfile):
    deployment = one(documents, "Deployment")
    unit = SYSTEMD_UNIT.read_text()
    assert crash_report_problems(unit, containerfile, deployment) == []
    name, value = BACKTRACE_SETTING
    assert f"the systemd unit does not set {name}={value}" in crash_report_problems(
        unit.replace(f"Environment={name}={value}", f"Environment={name}=sanitize=yes"), containerfile, deployment)
    assert "the systemd unit does not set LimitCORE=0" in crash_report_problems(
        unit.replace("LimitCORE=0", "LimitCORE=infinity"), containerfile, deployment)
    assert f"the runtime image does not set {name}={value}" in crash_report_problems(
        unit, containerfile.replace(f"ENV {name}={value}", ""), deployment)
    broken = copy.deepcopy(deployment)
    broken["spec"]["template"]["spec"]["containers"][0]["env"] = [
        item for item in broken["spec"]["template"]["spec"]["containers"][0]["env"] if item["name"] != name]
    assert f"the Deployment's container does not set {name}={value}" in crash_report_problems(
        unit, containerfile, broken)


def test_the_service_warns_at_start_without_the_setting(tmp_path: Path):
    """The binary's own check, through `serve`: one warning line naming the setting, none with it set."""
    name, value = BACKTRACE_SETTING
    key = generate_key(tmp_path, "KEY1")
    config = tmp_path / "offer-signer.json"
    config.write_text(json.dumps({
        "storage": "memory",
        "apps": [{"bundleId": "com.example.app", "issuerId": "57246542-96fe-1a63-e053-0824d011072a",
                  "keys": [{"keyId": "KEY1", "privateKeyFile": str(key)}],
                  "offers": [{"id": "o", "type": "promotional", "productIds": ["p"],
                              "requiresVerifiedCustomer": False}]}],
    }))

    def warnings(environment: dict[str, str]) -> list[str]:
        process = subprocess.Popen(
            [str(binary()), "serve", "--config", str(config), "--port", "0", "--log-level", "warning"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
        assert process.stdout is not None and process.stdout.readline().startswith("offer-signer listening on")
        process.terminate()
        _, errors = process.communicate(timeout=15)
        assert process.returncode == 0, errors
        return [line for line in errors.splitlines() if name in line]

    environment = {key: item for key, item in os.environ.items() if key != name}
    without = warnings(environment)
    assert len(without) == 1 and f"{name}={value}" in without[0], without
    assert warnings({**environment, name: value}) == []
    assert len(warnings({**environment, name: "sanitize=yes"})) == 1
