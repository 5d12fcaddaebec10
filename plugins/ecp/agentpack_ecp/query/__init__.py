"""Answering a question from the indexes: retrieval, fusion, the spec 6.3 response, synthesis."""
