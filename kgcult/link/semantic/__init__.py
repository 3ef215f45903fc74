"""The multilingual semantic stage: mentions matched by cosine similarity of USE sentence
vectors against the names of the topic's entities.

Modules: ``stage`` (the stage over a batch of mentions), ``search`` (encoder and search),
``bound`` (exact search above a floor through reduced vectors), ``checks`` (lexical checks
on the hits), ``use_model`` (the USE model cache), ``use_tokenizer`` (its tokenizer with the
vocabulary on disk).
"""
