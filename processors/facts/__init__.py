"""Facts: extraction of candidate triples and CLIPS truth maintenance (NeuSymMS)."""
