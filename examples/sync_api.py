"""The synchronous API: `ReMeSync` has `ReMe`'s methods without `async`. No LLM needed.

    python examples/sync_api.py
"""

from reme import ReMeSync

with ReMeSync() as reme:
    node = reme.add_memory("Alice prefers window seats", user_name="alice", tags=["travel"], score=0.8)
    reme.add_memory("Alice is vegetarian", user_name="alice", tags=["food"])
    for hit in reme.search_memory("seat preference", user_name="alice", top_k=3):
        print(hit.rank, hit.node.content)
    reme.update_memory(node.memory_id, content="Alice prefers aisle seats")  # same id, version 2
    print([v.node.content for v in reme.history(node.memory_id)])           # the state it replaced
    print(reme.count_memory(user_name="alice"), "memories for alice")
    print(reme.delete_all(user_name="alice"), "deleted")
