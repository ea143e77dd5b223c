// Command hashbench-go times Kubernetes' own pod-template hash, the baseline that
// `cliques bench hash` compares the canonical hash against.
//
// Each fixture (a PodTemplateSpec as JSON) is decoded once into corev1.PodTemplateSpec;
// then k8s.io/kubernetes/pkg/util/hash.DeepHashObject with FNV-32a (what the Deployment
// controller's ComputeHash does, collision count aside) is timed over -n iterations (by
// default, as many as fill -round), -rounds times. It prints one JSON document: ns/op of
// every round and their median, per fixture.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	hashutil "k8s.io/kubernetes/pkg/util/hash"
)

type result struct {
	Fixture    string    `json:"fixture"`
	Iterations int       `json:"iterations"`
	RoundsNsOp []float64 `json:"rounds_ns_per_op"`
	MedianNsOp float64   `json:"ns_per_op"`
	Hash       uint32    `json:"fnv32a"`
}

type report struct {
	Go        string   `json:"go"`
	Function  string   `json:"function"`
	GOMAXPROC int      `json:"gomaxprocs"`
	Results   []result `json:"results"`
}

func hashOnce(tpl *corev1.PodTemplateSpec) uint32 {
	hasher := fnv.New32a()
	hashutil.DeepHashObject(hasher, *tpl)
	return hasher.Sum32()
}

// calibrate returns an iteration count whose loop takes about `round`.
func calibrate(tpl *corev1.PodTemplateSpec, round time.Duration) int {
	n := 1
	for {
		start := time.Now()
		for i := 0; i < n; i++ {
			hashOnce(tpl)
		}
		elapsed := time.Since(start)
		if elapsed >= round/8 || n >= 1<<24 {
			if elapsed <= 0 {
				return n
			}
			return max(1, int(float64(n)*float64(round)/float64(elapsed)))
		}
		n *= 4
	}
}

func bench(path string, iterations, rounds int, round time.Duration) (result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return result{}, err
	}
	var tpl corev1.PodTemplateSpec
	if err := json.Unmarshal(data, &tpl); err != nil {
		return result{}, fmt.Errorf("%s: %w", path, err)
	}
	sum := hashOnce(&tpl)
	if iterations <= 0 {
		iterations = calibrate(&tpl, round) // also the warm-up
	}
	res := result{Fixture: path, Iterations: iterations, Hash: sum}
	for r := 0; r < rounds; r++ {
		start := time.Now()
		for i := 0; i < iterations; i++ {
			if hashOnce(&tpl) != sum {
				return result{}, fmt.Errorf("%s: hash is not stable", path)
			}
		}
		res.RoundsNsOp = append(res.RoundsNsOp, float64(time.Since(start).Nanoseconds())/float64(iterations))
	}
	sorted := append([]float64(nil), res.RoundsNsOp...)
	sort.Float64s(sorted)
	res.MedianNsOp = sorted[len(sorted)/2]
	return res, nil
}

func main() {
	iterations := flag.Int("n", 0, "iterations per round (0: as many as fill -round)")
	rounds := flag.Int("rounds", 5, "rounds (the median is reported)")
	round := flag.Duration("round", 200*time.Millisecond, "target duration of a round")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: hashbench-go [-n N | -round D] [-rounds R] FIXTURE.json...")
		os.Exit(2)
	}
	rep := report{
		Go:        runtime.Version(),
		Function:  "k8s.io/kubernetes/pkg/util/hash.DeepHashObject(fnv.New32a(), PodTemplateSpec)",
		GOMAXPROC: runtime.GOMAXPROCS(0),
	}
	for _, path := range flag.Args() {
		res, err := bench(path, *iterations, *rounds, *round)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hashbench-go:", err)
			os.Exit(1)
		}
		rep.Results = append(rep.Results, res)
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	if err := out.Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, "hashbench-go:", err)
		os.Exit(1)
	}
}
