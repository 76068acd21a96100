"""Model providers: chat models, embedders and rerankers behind small protocols."""
