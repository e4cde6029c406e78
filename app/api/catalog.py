"""/v1/items: catalog look-up, so clients can build histories from titles."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app.api.deps import CallerDep, CatalogDep
from app.api.openapi import V1_ERRORS, error_responses
from app.api.schemas import NO_NUL, ItemPublic, ItemsPublic
from app.services import catalog as service

router = APIRouter(prefix="/v1/items", tags=["catalog"], responses=V1_ERRORS)


@router.get("", response_model=ItemsPublic)
async def search_items(
    catalog: CatalogDep,
    caller: CallerDep,
    # No NUL: no query string of either API may hold one (app/api/input_guard.py).
    q: Annotated[str, Query(min_length=1, max_length=200, pattern=NO_NUL, examples=["toy story"])],
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> ItemsPublic:
    """Items whose title contains ``q`` (case-insensitive): exact matches first, then prefixes."""
    items = await service.search(catalog, query=q, limit=limit)
    data = [ItemPublic.from_item(i) for i in items]
    return ItemsPublic(data=data, count=len(data))


@router.get("/{item_id}", response_model=ItemPublic, responses=error_responses(404))
async def get_item(item_id: int, catalog: CatalogDep, caller: CallerDep) -> ItemPublic:
    item = service.get_item(catalog, item_id)
    return ItemPublic.from_item(item)
