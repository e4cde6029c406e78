"""Datasets: the on-disk format (:mod:`recmodels.dataset`) and how datasets are made.

- :func:`app.data.importer.import_llara` imports LLaRA-protocol files as they are;
- :func:`app.data.builders.build_movielens_raw` rebuilds LLaRA's MovieLens-100k splits from
  GroupLens ratings, :func:`app.data.builders.build_from_csv` builds from any interaction CSV;
- :func:`app.data.fetch.fetch_movielens` obtains MovieLens-100k on a fresh machine;
- :func:`app.data.catalog.search_items` finds items by title.

Every writer stages files and renames them into place, so a failure leaves nothing behind.
"""
