// Package levenshtein measures how far apart two words are, for the
// "did you mean" hints of the command line and the access-log formats.
//
// It knows nothing of what the words mean: callers choose the candidates
// and the distance worth a hint.
package levenshtein
