package levenshtein

import "testing"

// naive is the distance by its definition: the cheapest of deleting a's
// last byte, inserting b's, or ending both with the same byte (free when
// they are the same).
func naive(a, b string) int {
	if a == "" || b == "" {
		return len(a) + len(b)
	}
	sub := naive(a[:len(a)-1], b[:len(b)-1])
	if a[len(a)-1] != b[len(b)-1] {
		sub++
	}
	return min(naive(a[:len(a)-1], b)+1, naive(a, b[:len(b)-1])+1, sub)
}

// TestDistance holds Distance to the definition for every pair of words of
// up to three letters from {a, b, c}, and to two distances known by hand.
func TestDistance(t *testing.T) {
	words := []string{""}
	for i := 0; len(words[i]) < 3; i++ {
		words = append(words, words[i]+"a", words[i]+"b", words[i]+"c")
	}
	if len(words) != 40 {
		t.Fatalf("%d words, want 40", len(words))
	}
	for _, a := range words {
		for _, b := range words {
			if got, want := Distance(a, b), naive(a, b); got != want {
				t.Errorf("Distance(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
	if got := Distance("kitten", "sitting"); got != 3 {
		t.Errorf("Distance(kitten, sitting) = %d, want 3", got)
	}
	// An exchange of neighbours is two edits, not one.
	if got := Distance("egnine", "engine"); got != 2 {
		t.Errorf("Distance(egnine, engine) = %d, want 2", got)
	}
}
