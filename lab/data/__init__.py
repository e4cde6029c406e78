"""Datasets: the on-disk format (:mod:`recmodels.dataset`) and how datasets are made.

- :func:`lab.data.importer.import_llara` imports LLaRA-protocol files as they are;
- :func:`lab.data.builders.build_movielens_raw` rebuilds LLaRA's MovieLens-100k splits from
  GroupLens ratings, :func:`lab.data.builders.build_from_csv` builds from any interaction CSV;
- :func:`lab.data.fetch.fetch_movielens` obtains MovieLens-100k on a fresh machine;
- :func:`app.services.title_search.search_items` finds items by title.

Every writer stages files and renames them into place, so a failure leaves nothing behind.
"""
