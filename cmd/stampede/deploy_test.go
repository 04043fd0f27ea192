package main

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"stampede/scenarios"
)

const deployDir = "../../deploy/kubernetes"

// k8s is the part of the manifests the test reads.
type k8s struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		CompletionMode string   `yaml:"completionMode"`
		Completions    int      `yaml:"completions"`
		Parallelism    int      `yaml:"parallelism"`
		AccessModes    []string `yaml:"accessModes"`
		Template       struct {
			Spec struct {
				Containers []struct {
					Image string   `yaml:"image"`
					Args  []string `yaml:"args"`
					Env   []struct {
						Name      string `yaml:"name"`
						Value     string `yaml:"value"`
						ValueFrom *struct {
							ConfigMapKeyRef struct {
								Name string `yaml:"name"`
								Key  string `yaml:"key"`
							} `yaml:"configMapKeyRef"`
						} `yaml:"valueFrom"`
					} `yaml:"env"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name      string `yaml:"name"`
					ConfigMap *struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
					PersistentVolumeClaim *struct {
						ClaimName string `yaml:"claimName"`
					} `yaml:"persistentVolumeClaim"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func readManifests(t *testing.T) map[string]*k8s {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deployDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", deployDir, err)
	}
	out := map[string]*k8s{}
	for _, f := range files {
		dec := yaml.NewDecoder(bytes.NewReader(readFile(t, f)))
		dec.KnownFields(false)
		for {
			var m k8s
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if m.Kind == "" || m.Metadata.Name == "" {
				t.Fatalf("%s: a document without kind or name", f)
			}
			out[m.Kind+"/"+m.Metadata.Name] = &m
		}
	}
	return out
}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// TestKubernetesManifests holds deploy/kubernetes to the binary: the Job is
// Indexed with one pod per shard; its arguments, with Kubernetes' $(VAR)
// expanded as the kubelet does, parse as stampede run's flags and make pod
// I play shard I of N; the scenario path is the ConfigMap's mounted key and
// the scenario loads; --start-at parses; every shard writes under the
// results volume where the merge Job's pattern finds it; the image is the
// static binary on distroless.
func TestKubernetesManifests(t *testing.T) {
	ms := readManifests(t)
	job, cm, merge, pvc := ms["Job/stampede"], ms["ConfigMap/stampede-scenario"], ms["Job/stampede-merge"], ms["PersistentVolumeClaim/stampede-results"]
	if job == nil || cm == nil || merge == nil || pvc == nil {
		t.Fatalf("want Job/stampede, ConfigMap/stampede-scenario, Job/stampede-merge and PersistentVolumeClaim/stampede-results; have %v", keys(ms))
	}
	if job.Spec.CompletionMode != "Indexed" || job.Spec.Completions < 1 || job.Spec.Parallelism != job.Spec.Completions {
		t.Errorf("Job: completionMode %q, completions %d, parallelism %d; want Indexed, one pod per shard, all at once", job.Spec.CompletionMode, job.Spec.Completions, job.Spec.Parallelism)
	}
	if len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != "ReadWriteMany" {
		t.Errorf("results volume: access modes %v, want ReadWriteMany (every pod writes it)", pvc.Spec.AccessModes)
	}
	if _, err := scenarios.Parse("configmap scenario.yaml", []byte(cm.Data["scenario.yaml"])); err != nil {
		t.Errorf("the ConfigMap's scenario: %v", err)
	}
	n := job.Spec.Completions
	var outs []string
	for i := range n {
		args, mounts := podArgs(t, job, cm, map[string]string{envJobIndex: strconv.Itoa(i)})
		if len(args) < 2 || args[0] != "run" {
			t.Fatalf("Job args %v: want run SCENARIO ...", args)
		}
		root := newRoot(io.Discard, io.Discard)
		c, rest, err := root.Find(args)
		if err != nil || c.Name() != "run" {
			t.Fatalf("Job args %v: %v", args, err)
		}
		if err := c.ParseFlags(rest); err != nil {
			t.Fatalf("pod %d: the Job's flags are not stampede run's: %v", i, err)
		}
		if err := c.ValidateArgs(c.Flags().Args()); err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		get := func(name string) string { return c.Flags().Lookup(name).Value.String() }
		sf := shardFlags{shard: get("shard"), startAt: get("start-at"), runID: get("run-id")}
		sf.shards, _ = strconv.Atoi(get("shards"))
		sh, err := sf.resolve(func(k string) string {
			if k == envJobIndex {
				return strconv.Itoa(i)
			}
			return ""
		})
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		if sh.Index != i || sh.Count != n || sh.start.IsZero() {
			t.Errorf("pod %d plays shard %v starting %v; want %d/%d at the ConfigMap's start-at", i, sh.ShardInfo, sh.start, i, n)
		}
		if get("target") == "" {
			t.Errorf("pod %d: no --target: a shard plays against the server under test", i)
		}
		scen := c.Flags().Args()[0]
		if p, ok := mounts["configmap:stampede-scenario"]; !ok || filepath.Dir(scen) != filepath.Clean(p) || cm.Data[filepath.Base(scen)] == "" {
			t.Errorf("pod %d: scenario %s is not a key of the ConfigMap mounted at %s", i, scen, p)
		}
		out := get("out")
		if p, ok := mounts["pvc:stampede-results"]; !ok || !strings.HasPrefix(out, filepath.Clean(p)+"/") {
			t.Errorf("pod %d: --out %s is not on the results volume (mounted at %s)", i, out, p)
		}
		outs = append(outs, out)
	}
	if len(outs) > 1 && outs[0] == outs[1] {
		t.Errorf("pods write the same --out %s", outs[0])
	}

	args, mounts := podArgs(t, merge, cm, nil)
	root := newRoot(io.Discard, io.Discard)
	c, rest, err := root.Find(args)
	if err != nil || c.Name() != "report" {
		t.Fatalf("merge Job args %v: want report ... (%v)", args, err)
	}
	if err := c.ParseFlags(rest); err != nil {
		t.Fatalf("the merge Job's flags are not stampede report's: %v", err)
	}
	if _, ok := mounts["pvc:stampede-results"]; !ok {
		t.Errorf("the merge Job does not mount the results volume")
	}
	var found int
	for _, o := range outs {
		for _, pat := range c.Flags().Args() {
			if ok, _ := filepath.Match(pat, o+"/results.json"); ok {
				found++
			}
		}
	}
	if found != len(outs) {
		t.Errorf("the merge Job's %v finds %d of the %d shards' results.json", c.Flags().Args(), found, len(outs))
	}

	d := string(readFile(t, filepath.Join(deployDir, "Dockerfile")))
	for _, want := range []string{"CGO_ENABLED=0 go build", "./cmd/stampede", "FROM gcr.io/distroless/static", `ENTRYPOINT ["/stampede"]`, "COPY --from=build /out/stampede /stampede", "-o /out/stampede"} {
		if !strings.Contains(d, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	for _, j := range []*k8s{job, merge} {
		if img := j.Spec.Template.Spec.Containers[0].Image; img != "stampede:dev" {
			t.Errorf("%s: image %s, want the README's build, stampede:dev", j.Metadata.Name, img)
		}
	}
}

// podArgs returns the first container's args with $(VAR) expanded from its
// env (values and ConfigMap keys) and extra (what Kubernetes adds, such as
// JOB_COMPLETION_INDEX), and its mounts as "configmap:NAME" or "pvc:CLAIM"
// → mount path.
func podArgs(t *testing.T, j, cm *k8s, extra map[string]string) ([]string, map[string]string) {
	t.Helper()
	ct := j.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for k, v := range extra {
		env[k] = v
	}
	for _, e := range ct.Env {
		v := e.Value
		if e.ValueFrom != nil {
			ref := e.ValueFrom.ConfigMapKeyRef
			if ref.Name != cm.Metadata.Name || cm.Data[ref.Key] == "" {
				t.Fatalf("%s: env %s takes %s/%s, which the ConfigMap lacks", j.Metadata.Name, e.Name, ref.Name, ref.Key)
			}
			v = cm.Data[ref.Key]
		}
		env[e.Name] = v
	}
	var args []string
	for _, a := range ct.Args {
		args = append(args, envRef.ReplaceAllStringFunc(a, func(m string) string {
			name := envRef.FindStringSubmatch(m)[1]
			v, ok := env[name]
			if !ok {
				t.Errorf("%s: argument %q names $(%s), which the pod does not have", j.Metadata.Name, a, name)
			}
			return v
		}))
	}
	vols := map[string]string{}
	for _, v := range j.Spec.Template.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			vols[v.Name] = "configmap:" + v.ConfigMap.Name
		case v.PersistentVolumeClaim != nil:
			vols[v.Name] = "pvc:" + v.PersistentVolumeClaim.ClaimName
		}
	}
	mounts := map[string]string{}
	for _, m := range ct.VolumeMounts {
		mounts[vols[m.Name]] = m.MountPath
	}
	return args, mounts
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
